# SPDX-License-Identifier: Apache-2.0
# The two commands of the README: `make demo` (the main job) and `make test` (every test).
# Everything builds out of tree under build/.
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60
CMAKE_FLAGS ?=
MAKEFLAGS += --no-print-directory
HAVE_CLANG := $(shell command -v clang >/dev/null 2>&1 && echo yes)

.PHONY: all deps build test check asan tsan fuzz demo clean

all: build

deps:
	@scripts/deps.sh

build: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(BUILD) -j$(JOBS)

# Unit tests of the normal build (GPU tests skip without a GPU).
check: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The same tests under AddressSanitizer + UndefinedBehaviorSanitizer (GPU tests excluded: the
# driver and ASan do not mix; nor do the Python tests, whose interpreter is not instrumented).
asan: deps
	@cmake -S . -B $(BUILD)/asan -DCMAKE_BUILD_TYPE=Debug -DEHT_CUDA=OFF -DEHT_SANITIZE=address,undefined >/dev/null
	@cmake --build $(BUILD)/asan -j$(JOBS)
	cd $(BUILD)/asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 EHT_NO_CUDA=1 \
		ctest --output-on-failure -j$(JOBS) -LE '(gpu|python)'

# Threaded code under ThreadSanitizer.
tsan: deps
	@cmake -S . -B $(BUILD)/tsan -DCMAKE_BUILD_TYPE=Debug -DEHT_CUDA=OFF -DEHT_SANITIZE=thread >/dev/null
	@cmake --build $(BUILD)/tsan -j$(JOBS)
	cd $(BUILD)/tsan && TSAN_OPTIONS=halt_on_error=1 EHT_NO_CUDA=1 ctest --output-on-failure -j$(JOBS) -L threads -LE '(gpu|python)'

# libFuzzer on the safetensors header parser (half of FUZZ_SECONDS) and on the Engram STEPS.json and
# config.json parsers (a quarter each; needs clang).
FUZZ_HALF := $(shell echo $$(( $(FUZZ_SECONDS) / 2 )))
FUZZ_QUARTER := $(shell echo $$(( $(FUZZ_SECONDS) / 4 )))
fuzz: deps
ifeq ($(HAVE_CLANG),yes)
	@CC=clang cmake -S . -B $(BUILD)/fuzz -DCMAKE_BUILD_TYPE=Debug -DEHT_CUDA=OFF -DEHT_FUZZ=ON \
		-DEHT_SANITIZE=address,undefined >/dev/null
	@cmake --build $(BUILD)/fuzz -j$(JOBS) --target fuzz_st_header fuzz_engram_steps fuzz_engram_config
	@mkdir -p $(BUILD)/fuzz/corpus $(BUILD)/fuzz/corpus_steps $(BUILD)/fuzz/corpus_config
	$(BUILD)/fuzz/fuzz_st_header -max_total_time=$(FUZZ_HALF) -max_len=65536 \
		-print_final_stats=1 $(BUILD)/fuzz/corpus tests/fuzz/seeds 2>&1 | tail -n 15
	$(BUILD)/fuzz/fuzz_engram_steps -max_total_time=$(FUZZ_QUARTER) -max_len=4096 \
		-print_final_stats=1 $(BUILD)/fuzz/corpus_steps tests/fuzz/seeds_engram_steps 2>&1 | tail -n 6
	$(BUILD)/fuzz/fuzz_engram_config -max_total_time=$(FUZZ_QUARTER) -max_len=4096 \
		-print_final_stats=1 $(BUILD)/fuzz/corpus_config tests/fuzz/seeds_engram_config 2>&1 | tail -n 6
else
	@echo "eht: clang not found; skipping the fuzzer (apt-get install clang libclang-rt-14-dev)"
endif

# Everything: unit tests, sanitizers, threads, and a bounded fuzz run.
test: check asan tsan fuzz
	@echo "eht: make test passed (unit, asan+ubsan, tsan, fuzz $(FUZZ_SECONDS)s)"

demo: build
	@scripts/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD)
