# SPDX-License-Identifier: Apache-2.0
# The two commands of the README: `make demo` (the main job) and `make test` (every test).
# Everything builds out of tree under build/.
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
FUZZ_SECONDS ?= 60
CMAKE_FLAGS ?=
MAKEFLAGS += --no-print-directory
PREFIX  ?= /usr/local
# a literal comma inside $(call ...) arguments
, := ,
HAVE_CLANG := $(shell command -v clang >/dev/null 2>&1 && echo yes)

.PHONY: all deps build test check asan tsan fuzz analyze analyze-if-possible demo clean install uninstall wheel \
	check-aarch64 check-hip check-aarch64-if-possible check-hip-if-possible analyze-kernels

# configure DIR ARGS: runs cmake's configure step only when DIR has never been configured with exactly
# these ARGS (kept in DIR/.eht-configure). Otherwise `cmake --build` re-runs it by itself when a
# CMakeLists.txt, cmake/*.cmake or a globbed folder changes; configuring on every `make` cost seconds
# and, before fatbins.S was written through configure_file, relinked every program.
configure = args='$(2)'; stamp='$(1)/.eht-configure'; \
	if [ ! -f '$(1)/CMakeCache.txt' ] || [ "$$(cat "$$stamp" 2>/dev/null)" != "$$args" ]; then \
		cmake -S . -B '$(1)' $(2) >/dev/null && printf '%s\n' "$$args" > "$$stamp"; fi

all: build

# The packages the goal needs (scripts/deps.sh build|test): `make test` also the fuzzer's, MPI's and
# the install test's; `make demo` and `make build` only what building needs.
DEPS_SET ?= build
deps:
	@EHT_DEPS_UNAVAILABLE=$(BUILD)/.deps-unavailable scripts/deps.sh $(DEPS_SET)

build: deps
	@$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS))
	@cmake --build $(BUILD) -j$(JOBS)

# Unit tests of the normal build (GPU tests skip without a GPU).
check: build
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS)

# The same tests under AddressSanitizer + UndefinedBehaviorSanitizer (GPU tests excluded: the
# driver and ASan do not mix; nor do the Python tests, whose interpreter is not instrumented, nor the
# install tests, whose programs do not load the sanitizer runtime first).
asan: deps
	@$(call configure,$(BUILD)/asan,-DCMAKE_BUILD_TYPE=Debug -DEHT_CUDA=OFF -DEHT_SANITIZE=address$(,)undefined)
	@cmake --build $(BUILD)/asan -j$(JOBS)
	cd $(BUILD)/asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 EHT_NO_CUDA=1 \
		ctest --output-on-failure -j$(JOBS) -LE '(gpu|python|install)'
	@# Python objects after close (disk tickets included), and the encoder-cache region's cleanup
	@# through fork, restart and exit, with the interpreter running the ASan build of libeht.
	cd $(BUILD)/asan && LD_PRELOAD=$$($(CC) -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \
		EHT_NO_CUDA=1 EHT_LIB=$$PWD/libeht.so EHT_CLI=$$PWD/eht EHT_SOURCE_DIR=$(CURDIR) \
		python3 $(CURDIR)/tests/test_python_lifetime.py
	cd $(BUILD)/asan && LD_PRELOAD=$$($(CC) -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \
		EHT_NO_CUDA=1 EHT_LIB=$$PWD/libeht.so EHT_CLI=$$PWD/eht EHT_SOURCE_DIR=$(CURDIR) \
		PYTHONPATH=$(CURDIR)/python python3 $(CURDIR)/tests/test_python_shared_life.py

# Threaded code under ThreadSanitizer.
tsan: deps
	@$(call configure,$(BUILD)/tsan,-DCMAKE_BUILD_TYPE=Debug -DEHT_CUDA=OFF -DEHT_SANITIZE=thread)
	@cmake --build $(BUILD)/tsan -j$(JOBS)
	cd $(BUILD)/tsan && TSAN_OPTIONS=halt_on_error=1 EHT_NO_CUDA=1 ctest --output-on-failure -j$(JOBS) -L threads -LE '(gpu|python|install)'

# libFuzzer for FUZZ_SECONDS in all (needs clang), split among the targets: the safetensors header
# parser, what a worker parses from `eht serve` (hello + table descriptions), index.json, and the
# Engram STEPS.json and config.json parsers.
FUZZ_TARGETS := fuzz_st_header:seeds fuzz_serve_hello:seeds_serve fuzz_index_json:seeds_index \
	fuzz_engram_steps:seeds_engram_steps fuzz_engram_config:seeds_engram_config
fuzz: deps
ifeq ($(HAVE_CLANG),yes)
	@export CC=clang; $(call configure,$(BUILD)/fuzz,-DCMAKE_BUILD_TYPE=Debug -DEHT_CUDA=OFF -DEHT_FUZZ=ON \
		-DEHT_SANITIZE=address$(,)undefined)
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

# The clang static analyzer (scan-build, its default checkers) over the CPU build: the library, the
# CLI, the examples and the tests, every file analyzed afresh; fails on any finding (its HTML report
# under BUILD/analyze-report). About 3 minutes on 2 cores.
analyze: deps
	@command -v scan-build >/dev/null || { echo "eht: make analyze needs scan-build (apt-get install clang-tools)"; exit 1; }
	@rm -rf $(BUILD)/analyze $(BUILD)/analyze-report
	@scan-build -o $(BUILD)/analyze-report cmake -S . -B $(BUILD)/analyze -DCMAKE_BUILD_TYPE=Debug -DEHT_CUDA=OFF >/dev/null
	@scan-build -o $(BUILD)/analyze-report --status-bugs cmake --build $(BUILD)/analyze -j$(JOBS) > $(BUILD)/analyze.log 2>&1 \
		|| { grep -E "warning:|error:" $(BUILD)/analyze.log | sort -u; tail -n 3 $(BUILD)/analyze.log; exit 1; }
	@tail -n 1 $(BUILD)/analyze.log
# In make test where scan-build is installable (it comes with clang's tools), as the fuzzer.
analyze-if-possible:
	@if command -v scan-build >/dev/null; then $(MAKE) analyze; \
	else echo "eht: scan-build not found; skipping make analyze (apt-get install clang-tools)"; fi

# libeht, the CLI and the CPU tests cross-built for aarch64 (cmake/aarch64-linux-gnu.cmake: Debian's
# cross gcc, jansson and liburing from Debian's arm64 packages unpacked under BUILD) and run under
# qemu-user, the CLI the tests start included (cmake/cross_tests.cmake; label cross-skip: the few that
# cannot run under the emulator, each with its reason there). About 1.5 minutes on 2 cores.
AARCH64_SYSROOT = $(abspath $(BUILD))/aarch64-sysroot
check-aarch64:
	@scripts/deps.sh aarch64 $(AARCH64_SYSROOT)
	@$(call configure,$(BUILD)/aarch64,-DCMAKE_TOOLCHAIN_FILE=$(CURDIR)/cmake/aarch64-linux-gnu.cmake \
		-DEHT_AARCH64_SYSROOT=$(AARCH64_SYSROOT) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEHT_CUDA=OFF)
	@cmake --build $(BUILD)/aarch64 -j$(JOBS)
	cd $(BUILD)/aarch64 && EHT_NO_CUDA=1 ctest --output-on-failure -j$(JOBS) -LE '(gpu|python|install|cross-skip|user)'
# In make test: where the cross toolchain cannot be installed (no package mirror), said and skipped, as
# the fuzzer is without clang; once installed, its tests must pass.
check-aarch64-if-possible:
	@if scripts/deps.sh aarch64 $(AARCH64_SYSROOT); then $(MAKE) check-aarch64; \
	else echo "eht: the aarch64 cross toolchain could not be installed; skipping make check-aarch64"; fi

# libeht with the HIP backend (-DEHT_GPU_BACKEND=hip) and its kernels built by Debian's hipcc 5.2 for
# gfx90a and gfx1030, then the CPU tests of that build, the fake-runtime tests and the ABI check of
# src/gpu/hip/hip_types.h against ROCm's header. No AMD GPU here: test_gpu_* skip. The build runs with
# its own empty TMPDIR, which must stay empty (hipcc leaves folders there unless told where). Then the clang
# static analyzer over the kernels, which hipcc reads as HIP device code (make analyze-kernels).
check-hip:
	@scripts/deps.sh hip
	@$(call configure,$(BUILD)/hip,-DCMAKE_BUILD_TYPE=RelWithDebInfo -DEHT_GPU_BACKEND=hip)
	@rm -rf $(BUILD)/hip-tmp && mkdir -p $(BUILD)/hip-tmp
	@TMPDIR=$(abspath $(BUILD))/hip-tmp cmake --build $(BUILD)/hip -j$(JOBS)
	@if [ -n "$$(ls -A $(BUILD)/hip-tmp)" ]; then echo "eht: the HIP build left temporary files behind:"; \
		ls -A $(BUILD)/hip-tmp; exit 1; fi; rmdir $(BUILD)/hip-tmp
	cd $(BUILD)/hip && ctest --output-on-failure -j$(JOBS) -LE '(gpu|python|install|user)'
	@scripts/analyze-kernels.sh
# The clang static analyzer over src/gpu/kernels/*.cu as HIP device code, both wave sizes; fails on any
# finding, and when a control kernel's known defects go unreported (scripts/analyze-kernels.sh).
analyze-kernels:
	@scripts/deps.sh hip
	@scripts/analyze-kernels.sh
check-hip-if-possible:
	@if scripts/deps.sh hip; then $(MAKE) check-hip; \
	else echo "eht: Debian's ROCm packages could not be installed; skipping make check-hip"; fi

# Everything: unit tests, sanitizers, threads, a bounded fuzz run, the static analyzer, and the aarch64
# cross build's and the HIP build's tests where their toolchains can be installed.
test: DEPS_SET = test
test: check asan tsan fuzz analyze-if-possible check-aarch64-if-possible check-hip-if-possible
	@echo "eht: make test passed (unit, also as nobody when root, asan+ubsan, tsan, fuzz $(FUZZ_SECONDS)s, the clang analyzer, aarch64 under qemu and the HIP build where installable)"

# libeht.so, eht.h, eht.pc, the CMake package, the eht tool and man pages under PREFIX (DESTDIR
# stages them, as packagers do).
install: build
	@cmake --install $(BUILD) --prefix $(PREFIX)

# dist/eht-VERSION-py3-none-linux_ARCH.whl: the Python module with libeht.so.0 inside, made by the
# module's own build backend (python/eht_build.py, standard library only).
# The wheel: libeht and the eht tool built for it (liburing linked in, jansson carried beside them),
# tagged manylinux_2_X by the glibc versions its ELF files need (python/eht_build.py).
wheel: deps
	@$(call configure,$(BUILD)/wheel,-DCMAKE_BUILD_TYPE=Release -DEHT_WHEEL=ON $(CMAKE_FLAGS))
	@cmake --build $(BUILD)/wheel -j$(JOBS) --target eht eht_cli
	@mkdir -p dist
	@EHT_WHEEL_LIB=$(BUILD)/wheel/libeht.so.0 EHT_WHEEL_CLI=$(BUILD)/wheel/eht python3 -c 'import sys; \
		sys.path.insert(0, "python"); import eht_build; print("eht: dist/" + eht_build.build_wheel("dist"))'

uninstall:
	@test -f $(BUILD)/install_manifest.txt || { echo "eht: nothing installed from $(BUILD)"; exit 1; }
	@xargs rm -f < $(BUILD)/install_manifest.txt

# Only the eht tool: the demo runs nothing else (building every test program first took ~90 s).
demo: deps
	@$(call configure,$(BUILD),-DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS))
	@cmake --build $(BUILD) -j$(JOBS) --target eht_cli
	@scripts/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD)
