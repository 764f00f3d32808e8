/* NCCL's hardware model: per-link NVLink bandwidth by compute capability, RCCL's per-link xGMI
 * bandwidth by gfx architecture, the PCIe rate table matched by prefix, inter-socket bandwidth by
 * CPU, Broadcom switch detection, and the few PCI device ids a skeleton file can be completed
 * from. Figures are NCCL's src/graph/topo.h and topo.cc (../shared/research/topology-xml.md
 * section 2) and RCCL's src/graph/topo.h (ROCm/rccl 0cbce2a7571c907554199fad7e905f16ec0a565c). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "topo/topo_nccl.h"

/* NCCL's SMxx_NVLINK_BW, GB/s per link */
#define SM60_NVLINK_BW 18.0
#define SM70_NVLINK_BW 20.0
#define SM80_NVLINK_BW 20.0
#define SM86_NVLINK_BW 12.0
#define SM90_NVLINK_BW 20.6
#define SM100_NVLINK_BW 40.1

double mc_nccl_nvlink_bw(int sm)
{
    if (sm >= 100)
        return SM100_NVLINK_BW;
    if (sm >= 90)
        return SM90_NVLINK_BW;
    if (sm == 86)
        return SM86_NVLINK_BW;
    if (sm >= 80)
        return SM80_NVLINK_BW;
    if (sm >= 70)
        return SM70_NVLINK_BW;
    if (sm >= 60)
        return SM60_NVLINK_BW;
    return SM80_NVLINK_BW; /* NCCL's fallback for anything older */
}

/* RCCL's *_XGMI_WIDTH, GB/s per link */
#define VEGA_XGMI_WIDTH 24.0   /* gfx906 (MI50/MI60), gfx908 (MI100) and anything unlisted */
#define MI200_XGMI_WIDTH 36.0  /* gfx90a (MI210/MI250) */
#define GFX94X_XGMI_WIDTH 48.0 /* gfx940-942 (MI300) */

double mc_rccl_xgmi_bw(const char *gcn, char *arch, size_t len)
{
    /* convertGcnArchToGcnArchName: files from before gcnArchName hold the bare number */
    static const char *legacy[][2] = {{"906", "gfx906"}, {"908", "gfx908"}, {"910", "gfx90a"},
                                      {"940", "gfx940"}, {"941", "gfx941"}, {"942", "gfx942"}};
    const char *name = gcn;
    for (size_t i = 0; i < sizeof legacy / sizeof legacy[0]; i++)
        if (!strcmp(gcn, legacy[i][0]))
            name = legacy[i][1];
    snprintf(arch, len, "%s", name);
    /* IsArchMatch is a prefix match */
    if (!strncmp(name, "gfx90a", 6))
        return MI200_XGMI_WIDTH;
    if (!strncmp(name, "gfx94", 5))
        return GFX94X_XGMI_WIDTH;
    return VEGA_XGMI_WIDTH;
}

/* kvDictPciGen: per-lane rate in units of 100 Mb/s, first prefix match wins. */
static const struct {
    const char *prefix;
    int rate;
} pci_gen[] = {
    {"2.5 GT/s", 15},       {"5 GT/s", 30},          {"8 GT/s", 60},
    {"16 GT/s", 120},       {"32 GT/s", 240},        {"2.5 GT/s PCIe", 15},
    {"5.0 GT/s PCIe", 30},  {"8.0 GT/s PCIe", 60},   {"16.0 GT/s PCIe", 120},
    {"32.0 GT/s PCIe", 240}, {"64.0 GT/s PCIe", 480},
};
#define PCI_FALLBACK_RATE 60

double mc_nccl_pci_bw(const char *speed, int width, int *known)
{
    int rate = PCI_FALLBACK_RATE;
    *known = 0;
    if (width <= 0)
        width = 16;
    if (speed && *speed) {
        char *end;
        double gts = strtod(speed, &end);
        while (*end == ' ')
            end++;
        if (end == speed || strncmp(end, "GT/s", 4) != 0)
            return -1;
        if (!(gts > 0))
            return -2;
    }
    for (size_t i = 0; speed && i < sizeof(pci_gen) / sizeof(pci_gen[0]); i++) {
        if (!strncmp(speed, pci_gen[i].prefix, strlen(pci_gen[i].prefix))) {
            rate = pci_gen[i].rate;
            *known = 1;
            break;
        }
    }
    return (double)width * rate / 80.0;
}

/* NCCL's inter-socket figures, GB/s */
#define BDW_QPI_BW 6.0
#define SKL_QPI_BW 10.0
#define SRP_QPI_BW 22.0
#define ERP_QPI_BW 40.0
#define AMD_BW 16.0
#define ZPI_BW 6.0
#define YONGFENG_ZPI_BW 9.0
#define P9_BW 32.0
#define ARM_BW 6.0

double mc_nccl_cpu_bw(mc_dialect_t dialect, const char *arch, const char *vendor, int family,
                      int model)
{
    if (!arch)
        return MC_NCCL_LOC_BW;
    if (!strcmp(arch, "ppc64"))
        return P9_BW;
    if (!strcmp(arch, "arm64"))
        return ARM_BW;
    if (strcmp(arch, "x86_64") || !vendor)
        return MC_NCCL_LOC_BW;
    if (!strcmp(vendor, "GenuineIntel")) {
        if (family != 6)
            return BDW_QPI_BW;
        if (model >= 0xCF && dialect == MC_DIALECT_NCCL)
            return ERP_QPI_BW;
        if (model >= 0x8F && dialect == MC_DIALECT_NCCL)
            return SRP_QPI_BW;
        if (model >= 0x55)
            return SKL_QPI_BW;
        return BDW_QPI_BW;
    }
    if (!strcmp(vendor, "AuthenticAMD"))
        return AMD_BW;
    if (!strcmp(vendor, "CentaurHauls") || !strcmp(vendor, "  Shanghai  "))
        return family == 7 && model == 0x5B ? YONGFENG_ZPI_BW : ZPI_BW;
    return MC_NCCL_LOC_BW;
}

int mc_nccl_bcm_gen(uint64_t id, int level)
{
    if ((id & 0xfffffffffffff000ULL) == 0x1000c0101000a000ULL)
        return 4;
    if ((id & 0xfffffffffffff000ULL) == (0x1000c03010000000ULL | (uint64_t)level * 0x1000))
        return 5;
    return 0;
}

/* Device ids seen in real topology files (research note section 3). V100 boards are wired as a
 * cube-mesh the device id does not reveal, so no NVLinks are assumed for them. */
static const mc_gpu_profile_t gpus[] = {
    {0x1db5, "V100-SXM2-32GB", 70, 0, 0},  {0x20b0, "A100-SXM4-40GB", 80, 12, 0},
    {0x20b2, "A100-SXM4-80GB", 80, 12, 0}, {0x20b5, "A100-PCIe-80GB", 80, 0, 1},
    {0x2204, "GA102 (RTX 3090)", 86, 0, 1}, {0x2330, "H100-SXM5-80GB", 90, 18, 0},
    {0x2335, "H200-SXM", 90, 18, 0},       {0x2901, "B200", 100, 18, 0},
    {0x3182, "B300", 103, 18, 0},          {0x31c2, "GB300", 103, 18, 0},
};

const mc_gpu_profile_t *mc_nccl_gpu_profile(unsigned vendor, unsigned device)
{
    if (vendor != 0x10de)
        return NULL;
    for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]); i++)
        if (gpus[i].device == device)
            return &gpus[i];
    return NULL;
}

int mc_topo_gpu_model(const char *name, unsigned *device)
{
    char *end;
    unsigned long id = strtoul(name, &end, 16);
    for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]); i++)
        if (!strcasecmp(name, gpus[i].model) || (*name && !*end && id == gpus[i].device)) {
            *device = gpus[i].device;
            return 0;
        }
    return -1;
}

static char models[sizeof(gpus) / sizeof(gpus[0]) * 32];
static pthread_once_t models_once = PTHREAD_ONCE_INIT;

static void list_models(void)
{
    size_t at = 0;
    for (size_t i = 0; i < sizeof(gpus) / sizeof(gpus[0]) && at < sizeof models; i++)
        at += (size_t)snprintf(models + at, sizeof models - at, "%s%s (0x%04x)", i ? ", " : "",
                               gpus[i].model, gpus[i].device);
}

const char *mc_topo_gpu_models(void)
{
    pthread_once(&models_once, list_models);
    return models;
}

/* AWS p4d: 4 EFA devices for 400 Gb/s in all. */
static const mc_nic_profile_t nics[] = {
    {0x1d0f, 0xefa0, "AWS EFA", 100000},
};

const mc_nic_profile_t *mc_nccl_nic_profile(unsigned vendor, unsigned device)
{
    for (size_t i = 0; i < sizeof(nics) / sizeof(nics[0]); i++)
        if (nics[i].vendor == vendor && nics[i].device == device)
            return &nics[i];
    return NULL;
}
