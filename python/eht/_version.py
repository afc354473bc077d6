# SPDX-License-Identifier: Apache-2.0
"""The Python package's version: the libeht release it was made with (include/eht.h EHT_VERSION)."""
__version__ = "0.1.0"
