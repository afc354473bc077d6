# SPDX-License-Identifier: Apache-2.0
"""Fake vllm.model_executor.model_loader.utils: the function vLLM's loaders call once a model's weights
are loaded, before vLLM profiles its memory."""


def process_weights_after_loading(model, model_config, target_device):
    model.processed = getattr(model, "processed", 0) + 1
