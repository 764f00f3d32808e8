# meshcast build. One static library (libmeshcast.a) holds every module the CLI, the tests and
# the fuzzers share; the runtime is a separate library (libmeshcast_rt.a) that needs none of Z3,
# igraph or libxml2, so a training repository can link it alone. CUDA parts build when nvcc exists.

PREFIX   ?= /usr/local
BUILD    ?= build
CC       ?= cc
SANITIZE ?=
VERSION  := 0.1.0

# Every target that compiles runs scripts/deps.sh first, which installs missing Debian packages.
DEPS_STAMP := $(BUILD)/.deps-ok

PKGS      := igraph libxml-2.0 jansson libxxhash ompi-c
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) cmocka)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS)) -lz3 -lglpk -lm -lpthread

CSTD     := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
WARN     := -Wall -Wextra -Werror -Wshadow -Wpointer-arith -Wvla -Wno-unused-parameter
OPT      ?= -O2 -g
CFLAGS_ALL = $(CSTD) $(WARN) $(OPT) $(FUZZ_CFLAGS) -fPIC -I. -DMC_VERSION='"$(VERSION)"' $(PKG_CFLAGS) -MMD -MP
LDFLAGS_ALL =

ifneq ($(SANITIZE),)
  ifneq ($(SANITIZE),address,undefined)
    $(error SANITIZE must be address,undefined)
  endif
  OPT := -O1 -g
  SANFLAGS := -fsanitize=$(SANITIZE) -fno-sanitize-recover=$(SANITIZE) -fno-omit-frame-pointer
  CFLAGS_ALL += $(SANFLAGS)
  LDFLAGS_ALL += $(SANFLAGS)
endif

# Quiet build lines ("CC file"); make V=1 shows the full commands.
ifeq ($(V),1)
  Q :=
  say = @true
else
  Q := @
  say = @printf '  %-6s %s\n'
endif

LIB_DIRS := util topo layout cost sched sim synth synth/baselines synth/collectives synth/meshcast pipeline emit bench
LIB_SRCS := $(sort $(foreach d,$(LIB_DIRS),$(wildcard $(d)/*.c)))
RT_SRCS  := $(sort $(wildcard runtime/*.c))
CLI_SRCS := $(sort $(wildcard cli/*.c))
TEST_SRCS := $(sort $(wildcard tests/unit/test_*.c))

LIB_OBJS := $(LIB_SRCS:%.c=$(BUILD)/obj/%.o)
RT_OBJS  := $(RT_SRCS:%.c=$(BUILD)/obj/%.o)
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/obj/%.o)
TEST_BINS := $(TEST_SRCS:tests/unit/%.c=$(BUILD)/tests/%)

LIB     := $(BUILD)/libmeshcast.a
# The shared library the Python package loads (python/README.md): the static library's modules
# and the runtime's host-side C, without MPI or CUDA so that it needs no launcher or device.
SO      := $(BUILD)/libmeshcast.so
# python/capi holds the binding's C side, in the shared library only.
PY_SRCS := $(sort $(wildcard python/capi/*.c))
SO_OBJS  = $(LIB_OBJS) $(filter-out %/mpi.o %/mpi_sync.o %/drive.o,$(RT_SRCS:%.c=$(BUILD)/obj/%.o)) \
           $(RT_EMBED_OBJ) \
           $(PY_SRCS:%.c=$(BUILD)/obj/%.o)
RT_LIB  := $(BUILD)/libmeshcast_rt.a
CLI_BIN := $(BUILD)/meshcast

# Extra objects and link flags (CUDA, NCCL) come from the runtime's own fragment.
RT_EXTRA_OBJS :=
RT_EXTRA_LIBS :=
-include runtime/runtime.mk

.DEFAULT_GOAL := all
.PHONY: all deps demo test check bench sweep sweep-hosts8 sweep-wide fuzz fuzz-build install clean build-all python python-nccl-example
all: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all

build-all: $(CLI_BIN) $(TEST_BINS) $(SO)

$(DEPS_STAMP): scripts/deps.sh
	@scripts/deps.sh
	@mkdir -p $(BUILD) && touch $@

deps:
	@scripts/deps.sh

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(say) CC $<
	$(Q)$(CC) $(CFLAGS_ALL) -c $< -o $@

# Schemas compiled into the library with the assembler's .incbin.
$(BUILD)/obj/topo/topo_cluster_schema.o: topologies/schema/cluster.rng
$(BUILD)/obj/sched/sched_schema.o: sched/schedule.rng

$(LIB): $(LIB_OBJS)
	@mkdir -p $(dir $@)
	$(say) AR $@
	$(Q)rm -f $@ && ar rcs $@ $^

$(RT_LIB): $(RT_OBJS) $(RT_EXTRA_OBJS)
	@mkdir -p $(dir $@)
	$(say) AR $@
	$(Q)rm -f $@ && ar rcs $@ $^

$(SO): $(SO_OBJS)
	$(say) LINK $@
	$(Q)$(CC) -shared $(LDFLAGS_ALL) -Wl,--no-undefined -o $@ $^ $(PKG_LIBS)

$(CLI_BIN): $(CLI_OBJS) $(LIB) $(RT_LIB)
	$(say) LINK $@
	$(Q)$(CC) $(LDFLAGS_ALL) -o $@ $(CLI_OBJS) $(LIB) $(RT_LIB) $(RT_EXTRA_LIBS) $(PKG_LIBS)

$(BUILD)/tests/%: tests/unit/%.c $(LIB) $(RT_LIB)
	@mkdir -p $(dir $@)
	$(say) LINK $@
	$(Q)$(CC) $(CFLAGS_ALL) -o $@ $< $(LDFLAGS_ALL) $(LIB) $(RT_LIB) $(RT_EXTRA_LIBS) $(PKG_LIBS) -lcmocka

# The Python package (python/README.md): libmeshcast.so copied into it, installed with Debian's
# pip into /usr/bin/python3's site-packages, again only when the library or a source changed.
PYTHON   ?= /usr/bin/python3
PY_STAMP := $(BUILD)/.python-installed
PY_FILES := $(sort $(wildcard python/meshcast/*.py)) python/pyproject.toml python/README.md
python: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all
	@$(MAKE) --no-print-directory $(PY_STAMP)

$(PY_STAMP): $(SO) $(PY_FILES)
	$(say) PIP python/
	$(Q)mkdir -p python/meshcast/_lib && cp $(SO) python/meshcast/_lib/libmeshcast.so
	$(Q)$(PYTHON) -m pip install -q --no-deps --no-build-isolation --no-index \
	  --break-system-packages ./python >$(BUILD)/pip.log 2>&1 || { cat $(BUILD)/pip.log; exit 1; }
	$(Q)rm -rf python/build python/*.egg-info && touch $@

# The emitted CUDA called from PyTorch (python/examples/torch_nccl/README.md); needs nvcc.
python-nccl-example: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all
	@python/examples/torch_nccl/build.sh $(abspath $(CLI_BIN))

demo: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all
	@$(MAKE) --no-print-directory $(PY_STAMP)
	@scripts/demo.sh $(CLI_BIN)

test: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all
	@$(MAKE) --no-print-directory $(PY_STAMP)
	@tests/run.sh $(BUILD)

# ASan + UBSan build in its own folder, running the same tests, then every fuzzer over its fixed
# inputs (fuzz/corpus/, the repository's seeds) without mutating them: the same inputs, all of
# them, on any machine however fast, so a check that passed once does not fail later on a new find
# (a timed mutation run tried more inputs on a faster machine, and which ones followed addresses
# and the environment); 'make fuzz' explores.
check: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory BUILD=build-check SANITIZE=address,undefined build-all
	@ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 tests/run.sh build-check
	@$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=0 FUZZ_RUNS=0 FUZZ_CORPUS=smoke FUZZ_OUTSIDE=

bench: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all
	$(CLI_BIN) bench

# Generated reshardings on topologies outside the suites (bench/sweep.py; its default subset of 60
# cases takes about a minute): every strategy's time over the bound and the cost model's error, then a summary.
sweep: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all
	@$(MAKE) --no-print-directory $(PY_STAMP)
	$(PYTHON) bench/sweep.py $(SWEEP_ARGS)

# The 96 eight-host cases (64 GPUs; docs/synthesis.md, README's "Not yet done"): the six clusters
# of topologies/*-x8.xml at 4 MiB and 1 GiB, every pattern, meshcast only (about two minutes).
# SWEEP_ARGS adds options, e.g. SWEEP_ARGS='--jsonl OUT.jsonl'.
SWEEP_HOSTS8_TOPOS := dgx1-x8,h100-x8,mi250-x8,mi300x-x8,p4d-x8,rtx3090-x8
sweep-hosts8: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all
	@$(MAKE) --no-print-directory $(PY_STAMP)
	$(PYTHON) bench/sweep.py --topos $(SWEEP_HOSTS8_TOPOS) --sizes 4M,1024M \
	  --patterns allgather,alltoall,bcast,transpose,uneven,cross2d,same2d,hostbcast \
	  --strategies meshcast $(SWEEP_ARGS)

# The 288 cases of docs/synthesis.md (session 14 on): every pattern at 4 MiB, 64 MiB and 1 GiB on
# 16 boxes and clusters, then 2-D swaps and host broadcasts on the 8 clusters; meshcast only.
# Both runs append to the same --jsonl file where SWEEP_ARGS names one.
SWEEP_WIDE_TOPOS := aws-p3.8xlarge-x5,aws-p4d-24xlarge-topo,dgx-a100-x4,dgx1-v100-hybrid-cube-mesh-topo,mi250-x2,mi300x-x2,oci-a100-x8,oci-bm-gpu-h100.8-topo,oci-bm-gpu4.8-a100-topo,oci-h100-x2,p4d-x4,pcie-rtx3090-x4,pcie-rtx3090x8-1nic-topo,rccl-topo_4p3l,rccl-topo_8p1h,rccl-topo_8p_940
SWEEP_WIDE_CLUSTERS := aws-p3.8xlarge-x5,dgx-a100-x4,mi250-x2,mi300x-x2,oci-a100-x8,oci-h100-x2,p4d-x4,pcie-rtx3090-x4
sweep-wide: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory build-all
	@$(MAKE) --no-print-directory $(PY_STAMP)
	$(PYTHON) bench/sweep.py --topos $(SWEEP_WIDE_TOPOS) --sizes 4M,64M,1024M \
	  --patterns allgather,alltoall,bcast,transpose,uneven --strategies meshcast $(SWEEP_ARGS)
	$(PYTHON) bench/sweep.py --topos $(SWEEP_WIDE_CLUSTERS) --sizes 4M,64M \
	  --patterns cross2d,hostbcast,same2d --strategies meshcast $(SWEEP_ARGS)

# libFuzzer targets (fuzz/fuzz_*.c), each run for FUZZ_SECONDS (crashing or slow inputs land in
# build-fuzz/, never in the source tree), seeded from fuzz/corpus/ (what earlier runs found, kept
# small with -merge=1) and the inputs of its kind: topology files (the real ones, the shipped ones,
# the test ones: RCCL rows, NICs on any PCI class), schedules, task files, notation and pipeline
# files (examples/). What it finds grows build-fuzz/fuzz_*.FUZZ_CORPUS (the corpus "smoke" starts
# empty every time). FUZZ_OUTSIDE: the seeds from outside the repository (the real topology files,
# where ../shared has them). A run with a fixed FUZZ_SEED repeats itself on one machine only
# without address randomization and without the corpus reloaded every second: both are off
# (setarch -R where the machine allows it). To add a run's finds to fuzz/corpus:
# build-fuzz/fuzz_X -merge=1 fuzz/corpus/fuzz_X build-fuzz/fuzz_X.corpus
FUZZ_SECONDS ?= 60
FUZZ_RUNS ?= -1
FUZZ_SEED ?= 0
FUZZ_CORPUS ?= corpus
FUZZ_OUTSIDE ?= ../shared/topo-xml
FUZZ_NO_ASLR := $(shell setarch $$(uname -m) -R true 2>/dev/null && echo setarch $$(uname -m) -R)
FUZZ_BINS := $(patsubst fuzz/%.c,build-fuzz/%,$(wildcard fuzz/fuzz_*.c))
FUZZ_SEEDS_fuzz_topo := $(FUZZ_OUTSIDE) topologies tests/data/topo tests/data/cluster
FUZZ_SEEDS_fuzz_sched := tests/data/sched
FUZZ_SEEDS_fuzz_task := tests/data/tasks tests/data/hostile examples
FUZZ_SEEDS_fuzz_notation := tests/data/notation
FUZZ_SEEDS_fuzz_pipeline := examples
fuzz: $(DEPS_STAMP)
	@$(MAKE) --no-print-directory BUILD=build-fuzz CC=clang SANITIZE=address,undefined \
	  FUZZ_CFLAGS=-fsanitize=fuzzer-no-link fuzz-build
	@$(foreach f,$(FUZZ_BINS),rm -rf $(f).smoke && mkdir -p $(f).$(FUZZ_CORPUS) && \
	  $(FUZZ_NO_ASLR) $(f) -max_total_time=$(FUZZ_SECONDS) -runs=$(FUZZ_RUNS) -seed=$(FUZZ_SEED) -reload=0 \
	    -artifact_prefix=build-fuzz/ $(f).$(FUZZ_CORPUS) \
	    $(wildcard fuzz/corpus/$(notdir $(f)) $(FUZZ_SEEDS_$(notdir $(f)))) &&) true

fuzz-build: $(FUZZ_BINS)

build-fuzz/%: fuzz/%.c $(LIB) $(RT_LIB)
	$(CC) $(CFLAGS_ALL) -fsanitize=fuzzer -o $@ $< $(LDFLAGS_ALL) $(LIB) $(RT_LIB) $(RT_EXTRA_LIBS) $(PKG_LIBS)

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/lib/pkgconfig $(DESTDIR)$(PREFIX)/include/meshcast
	install -m 755 $(CLI_BIN) $(DESTDIR)$(PREFIX)/bin/meshcast
	install -m 644 $(LIB) $(RT_LIB) $(DESTDIR)$(PREFIX)/lib/
	install -m 644 runtime/runtime.h $(DESTDIR)$(PREFIX)/include/meshcast/
	install -d $(DESTDIR)$(PREFIX)/share/meshcast/topologies/schema
	install -m 644 topologies/*.xml $(DESTDIR)$(PREFIX)/share/meshcast/topologies/
	install -m 644 topologies/schema/cluster.rng $(DESTDIR)$(PREFIX)/share/meshcast/topologies/schema/
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@VERSION@|$(VERSION)|g' \
	  -e 's|@LIBS@|$(RT_EXTRA_LIBS) $(shell pkg-config --libs ompi-c)|g' meshcast.pc.in \
	  > $(DESTDIR)$(PREFIX)/lib/pkgconfig/meshcast.pc

clean:
	rm -rf build build-check build-fuzz

-include $(LIB_OBJS:.o=.d) $(RT_OBJS:.o=.d) $(CLI_OBJS:.o=.d) $(PY_SRCS:%.c=$(BUILD)/obj/%.d)
