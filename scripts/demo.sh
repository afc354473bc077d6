#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# demo.sh: the main job on a small built-in default (see README). Placeholder until [serve] lands:
# prints the version.
set -euo pipefail
build=${1:-build}
"$build/eht" version
