#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# demo.sh: the main job on a small built-in default, from the repository alone: write a synthetic
# Engram-shaped checkpoint with eht's own safetensors writer and inspect it.
set -euo pipefail
build=${1:-build}
work=$(mktemp -d "${TMPDIR:-/tmp}/eht-demo-XXXXXX")
trap 'rm -rf "$work"' EXIT
"$build/eht" synth "$work/ckpt" --tables 2 --rows 5000 --shards 3
"$build/eht" info "$work/ckpt"
