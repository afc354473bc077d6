# SPDX-License-Identifier: Apache-2.0
# The two commands of the README: `make demo` (the main job) and `make test` (every test).
# Everything builds out of tree under build/.
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60
CMAKE_FLAGS ?=
MAKEFLAGS += --no-print-directory
PREFIX  ?= /usr/local
HAVE_CLANG := $(shell command -v clang >/dev/null 2>&1 && echo yes)

.PHONY: all deps build test check asan tsan fuzz demo clean install uninstall

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
# driver and ASan do not mix; nor do the Python tests, whose interpreter is not instrumented, nor the
# install tests, whose programs do not load the sanitizer runtime first).
asan: deps
	@cmake -S . -B $(BUILD)/asan -DCMAKE_BUILD_TYPE=Debug -DEHT_CUDA=OFF -DEHT_SANITIZE=address,undefined >/dev/null
	@cmake --build $(BUILD)/asan -j$(JOBS)
	cd $(BUILD)/asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 EHT_NO_CUDA=1 \
		ctest --output-on-failure -j$(JOBS) -LE '(gpu|python|install)'
	@# Python objects after close, with the interpreter running the ASan build of libeht.
	cd $(BUILD)/asan && LD_PRELOAD=$$($(CC) -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \
		EHT_NO_CUDA=1 EHT_LIB=$$PWD/libeht.so EHT_CLI=$$PWD/eht EHT_SOURCE_DIR=$(CURDIR) \
		python3 $(CURDIR)/tests/test_python_lifetime.py

# Threaded code under ThreadSanitizer.
tsan: deps
	@cmake -S . -B $(BUILD)/tsan -DCMAKE_BUILD_TYPE=Debug -DEHT_CUDA=OFF -DEHT_SANITIZE=thread >/dev/null
	@cmake --build $(BUILD)/tsan -j$(JOBS)
	cd $(BUILD)/tsan && TSAN_OPTIONS=halt_on_error=1 EHT_NO_CUDA=1 ctest --output-on-failure -j$(JOBS) -L threads -LE '(gpu|python|install)'

# libFuzzer for FUZZ_SECONDS in all (needs clang), split among the targets: the safetensors header
# parser, what a worker parses from `eht serve` (hello + table descriptions), index.json, and the
# Engram STEPS.json and config.json parsers.
FUZZ_TARGETS := fuzz_st_header:seeds fuzz_serve_hello:seeds_serve fuzz_index_json:seeds_index \
	fuzz_engram_steps:seeds_engram_steps fuzz_engram_config:seeds_engram_config
fuzz: deps
ifeq ($(HAVE_CLANG),yes)
	@CC=clang cmake -S . -B $(BUILD)/fuzz -DCMAKE_BUILD_TYPE=Debug -DEHT_CUDA=OFF -DEHT_FUZZ=ON \
		-DEHT_SANITIZE=address,undefined >/dev/null
	@cmake --build $(BUILD)/fuzz -j$(JOBS) --target fuzz_st_header fuzz_serve_hello fuzz_index_json \
		fuzz_engram_steps fuzz_engram_config
	@set -e; each=$$(( $(FUZZ_SECONDS) / 5 )); [ $$each -ge 1 ] || each=1; \
	for ts in $(FUZZ_TARGETS); do t=$${ts%%:*}; seeds=$${ts#*:}; \
		mkdir -p $(BUILD)/fuzz/corpus-$$t; echo "eht: fuzzing $$t for $$each s"; \
		$(BUILD)/fuzz/$$t -max_total_time=$$each -max_len=65536 -print_final_stats=1 \
			$(BUILD)/fuzz/corpus-$$t tests/fuzz/$$seeds > $(BUILD)/fuzz/$$t.log 2>&1 \
			|| { tail -n 40 $(BUILD)/fuzz/$$t.log; exit 1; }; \
		tail -n 4 $(BUILD)/fuzz/$$t.log; done
else
	@echo "eht: clang not found; skipping the fuzzer (apt-get install clang libclang-rt-14-dev)"
endif

# Everything: unit tests, sanitizers, threads, and a bounded fuzz run.
test: check asan tsan fuzz
	@echo "eht: make test passed (unit, asan+ubsan, tsan, fuzz $(FUZZ_SECONDS)s)"

# libeht.so, eht.h, eht.pc, the CMake package, the eht tool and man pages under PREFIX (DESTDIR
# stages them, as packagers do).
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

uninstall:
	@test -f $(BUILD)/install_manifest.txt || { echo "eht: nothing installed from $(BUILD)"; exit 1; }
	@xargs rm -f < $(BUILD)/install_manifest.txt

demo: build
	@scripts/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD)
