// How a launch grouped its blocks into thread-block clusters: block b
// writes, at out[2b] and out[2b + 1], the number of blocks in its cluster
// (%cluster_nctarank) and its rank there (%cluster_ctarank). Clusters are
// sm_90 and later; built for an older architecture, a block is its own
// cluster (1, 0).
extern "C" __global__ void cluster_shape(unsigned int *out)
{
    if (threadIdx.x != 0)
        return;
    unsigned int n = 1, rank = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
#endif
    unsigned int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    out[2 * b] = n;
    out[2 * b + 1] = rank;
}
