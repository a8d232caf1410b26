# The commands people type. Everything goes through CMake; see README.md.
#   make / make run   build, verify and benchmark every chapter on this GPU (the standard sweep,
#                     then the shapes sweep for chapters 09, 12-14), regenerate plots
#   make test         build and run the tests (GPU tests report SKIPPED without a GPU)
#   make chNN         build one chapter, verify it and run its benchmark sweep
#   make compare      the peers (cuDNN, PyTorch) by the same method, then the plots
#                     (make run COMPARE=1: the chapters and then the peers, in one go)
#   make docs         the course site in docs/html/ (Doxygen)
#   make plots        figures and tables from the committed JSON (no GPU needed)
#   make clean
# Variables: BUILD=build  QUICK=1 (a few shapes)  COMPARE=1
#   CMAKE_FLAGS='-DCMAKE_CUDA_ARCHITECTURES=86' (re-runs the configure step, also on an existing build)
# First time on a fresh machine: scripts/install-deps.sh test (it installs make itself).

BUILD       ?= build
CMAKE_FLAGS ?=
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
QUICK       ?=
COMPARE     ?=
NVCC_DIR    := $(shell command -v nvcc >/dev/null 2>&1 || echo /usr/local/cuda/bin)
export PATH := $(if $(NVCC_DIR),$(NVCC_DIR):,)$(PATH)
GENERATOR   := $(if $(shell command -v ninja 2>/dev/null),-G Ninja,)
RUN_FLAGS   := $(if $(QUICK),--quick,)
# The shapes sweep (odd widths, vocabulary rows, few long rows): LayerNorm's and the production
# softmax's dispatch, not every forced path.
SHAPES_CHAPTERS := ch09 ch12 ch13 ch14
SHAPES_KERNELS  := /dispatch/,/production/,/fused/

.PHONY: all run compare build configure test docs plots clean help deps-build deps-test deps-docs deps-plots FORCE

all: run

# The parallelism is inside cmake --build -j; at this level `make -j test` must not configure
# before install-deps has installed what the configure step looks for.
.NOTPARALLEL:

help:
	@sed -n '2,14p' Makefile | sed 's/^# \{0,1\}//'

deps-build deps-test deps-docs deps-plots: deps-%:
	@scripts/install-deps.sh $*

# CMake keeps an existing build's cached values, so a non-empty CMAKE_FLAGS re-runs the configure
# step on every call (seconds) for `make CMAKE_FLAGS=...` to change that build. Without it the
# cache is made once. -G only on a new build: CMake refuses to switch an existing one's generator.
$(BUILD)/CMakeCache.txt: $(if $(strip $(CMAKE_FLAGS)),FORCE)
	cmake -S . -B $(BUILD) $(if $(wildcard $(BUILD)/CMakeCache.txt),,$(GENERATOR)) $(CMAKE_FLAGS)

FORCE:

configure: $(BUILD)/CMakeCache.txt

build: deps-build configure
	cmake --build $(BUILD) -j $(JOBS)

run: build deps-plots
	scripts/run-chapters.sh $(RUN_FLAGS)
	$(if $(QUICK),,scripts/run-chapters.sh --sweep shapes --no-verify --kernel $(SHAPES_KERNELS) $(SHAPES_CHAPTERS))
	$(if $(COMPARE),scripts/run-peers.sh $(RUN_FLAGS))
	$(if $(COMPARE),$(if $(QUICK),,scripts/run-peers.sh --sweep shapes --no-verify))
	$(MAKE) --no-print-directory plots

compare: build deps-plots
	scripts/run-peers.sh $(RUN_FLAGS)
	$(if $(QUICK),,scripts/run-peers.sh --sweep shapes --no-verify)
	$(MAKE) --no-print-directory plots

test: deps-test configure
	cmake --build $(BUILD) -j $(JOBS)
	cd $(BUILD) && ctest --output-on-failure

docs: deps-docs configure
	cmake --build $(BUILD) --target docs

plots: deps-plots
	"$$(scripts/find-python.sh)" scripts/plot.py --tables

# make ch01 (or make ch01_naive_softmax): build that chapter, verify it, run its sweep.
ch%: deps-build configure
	@dir=$$(ls -d chapters/$$(echo $* | cut -c1-2)_* 2>/dev/null | head -1); \
	  [ -n "$$dir" ] || { echo "no chapter matches ch$*"; exit 2; }; \
	  target=ch$$(basename $$dir); \
	  cmake --build $(BUILD) -j $(JOBS) --target $$target && scripts/run-chapters.sh $(RUN_FLAGS) $$target

clean:
	rm -rf $(BUILD) bin docs/html
