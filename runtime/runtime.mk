# runtime.mk: the runtime's part of the build, included by the Makefile. When nvcc exists, the
# CUDA backends (runtime/*.cu) join libmeshcast_rt.a and the binaries link CUDA and NCCL;
# without it, runtime/cuda_none.c answers that CUDA is missing. The runtime sources that
# `meshcast emit --standalone` writes are embedded into the runtime library here.

CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
CUDA_ARCH ?= -arch=sm_90
NVCCFLAGS := -std=c++17 -O2 $(CUDA_ARCH) -Werror all-warnings -I. -I$(CUDA_HOME)/include \
             $(shell pkg-config --cflags ompi-c) -DOMPI_SKIP_MPICXX=1 \
             -Xcompiler -Wall,-Wextra,-Werror,-Wno-unused-parameter

ifneq ($(wildcard $(NVCC)),)
  RT_CU_SRCS := $(sort $(wildcard runtime/*.cu))
  RT_OBJS := $(filter-out %/cuda_none.o,$(RT_OBJS))
  RT_EXTRA_OBJS += $(RT_CU_SRCS:%.cu=$(BUILD)/obj/%.cu.o)
  RT_EXTRA_LIBS += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 -lnccl -lcudart -lstdc++
endif

$(BUILD)/obj/runtime/%.cu.o: runtime/%.cu runtime/runtime.h runtime/rt_internal.h runtime/copy_kernel.cuh
	@mkdir -p $(dir $@)
	$(say) NVCC $<
	$(Q)$(NVCC) $(NVCCFLAGS) -c $< -o $@

# The files a training repository needs besides the generated ones (emit --standalone).
RT_EMBED_FILES := runtime/runtime.h runtime/rt_internal.h runtime/copy_kernel.cuh runtime/plan.c \
                  runtime/graph.c runtime/cuda_exec.cu
RT_EMBED_OBJ := $(BUILD)/obj/gen/rt_embed.o
RT_EXTRA_OBJS += $(RT_EMBED_OBJ)

# Pattern rules only: an explicit rule here would become the Makefile's default goal. The
# generated C file is kept (not removed as an intermediate) so a rebuild can be checked.
.PRECIOUS: $(BUILD)/gen/%_embed.c
$(BUILD)/gen/%_embed.c: $(RT_EMBED_FILES) runtime/embed.sh
	@mkdir -p $(dir $@)
	$(say) EMBED $@
	$(Q)runtime/embed.sh $(RT_EMBED_FILES) > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(say) CC $<
	$(Q)$(CC) $(CFLAGS_ALL) -c $< -o $@
