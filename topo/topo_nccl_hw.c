/* NCCL's hardware model: per-link NVLink bandwidth by compute capability, the PCIe rate table
 * matched by prefix, inter-socket bandwidth by CPU, Broadcom switch detection, and the few PCI
 * device ids a skeleton file can be completed from. Figures are NCCL's src/graph/topo.h and
 * topo.cc (../shared/research/topology-xml.md section 2). */
#include <stdlib.h>
#include <string.h>

#include "topo/topo_nccl.h"

double mc_nccl_nvlink_bw(int sm)
{
    if (sm >= 100)
        return 40.1;
    if (sm >= 90)
        return 20.6;
    if (sm == 86)
        return 12.0;
    if (sm >= 70) /* V100 and A100 share 20 GB/s */
        return 20.0;
    if (sm >= 60)
        return 18.0;
    return 20.0; /* NCCL's fallback for anything older is the SM80 figure */
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

double mc_nccl_cpu_bw(const char *arch, const char *vendor, int family, int model)
{
    if (!arch)
        return MC_NCCL_LOC_BW;
    if (!strcmp(arch, "ppc64"))
        return 32.0;
    if (!strcmp(arch, "arm64"))
        return 6.0;
    if (strcmp(arch, "x86_64") || !vendor)
        return MC_NCCL_LOC_BW;
    if (!strcmp(vendor, "GenuineIntel")) {
        if (family != 6)
            return 6.0;
        if (model >= 0xCF)
            return 40.0;
        if (model >= 0x8F)
            return 22.0;
        if (model >= 0x55)
            return 10.0;
        return 6.0;
    }
    if (!strcmp(vendor, "AuthenticAMD"))
        return 16.0;
    if (!strcmp(vendor, "CentaurHauls") || !strcmp(vendor, "  Shanghai  "))
        return family == 7 && model == 0x5B ? 9.0 : 6.0;
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
    {0x1db5, "V100-SXM2-32GB", 70, 0},  {0x20b0, "A100-SXM4-40GB", 80, 12},
    {0x20b2, "A100-SXM4-80GB", 80, 12}, {0x20b5, "A100-PCIe-80GB", 80, 0},
    {0x2204, "GA102 (RTX 3090)", 86, 0}, {0x2330, "H100-SXM5-80GB", 90, 18},
    {0x2335, "H200-SXM", 90, 18},       {0x2901, "B200", 100, 18},
    {0x3182, "B300", 103, 18},          {0x31c2, "GB300", 103, 18},
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
