// TMA (sm_90 and later): each block copies one box_w x box_h tile of a 2-D
// float tensor, described by a tensor map passed by value, into shared memory
// with one cp.async.bulk.tensor (completion counted by an mbarrier), then its
// threads write the tile's elements that lie inside the tensor to out, a
// width x height float matrix with rows packed, at the tile's place. Block
// (bx, by) copies the tile whose corner is (bx * box_w, by * box_h); what
// the box reads past the tensor's edges TMA fills with zeros, and is not
// written. The kernel cannot read the opaque map: box_w and box_h must be
// the map's boxDim, and the dynamic shared memory box_w * box_h * 4 + 128
// bytes.
#include <cuda.h>
#include <stdint.h>

extern "C" __global__ void tma_copy_tile(const __grid_constant__ CUtensorMap map, float *out,
                                         unsigned int width, unsigned int height,
                                         unsigned int box_w, unsigned int box_h)
{
    extern __shared__ unsigned char smem_raw[];
    __shared__ alignas(8) uint64_t bar;
    // TMA writes shared memory at a 128-byte aligned address.
    uintptr_t base = ((uintptr_t)smem_raw + 127) & ~(uintptr_t)127;
    float *tile = reinterpret_cast<float *>(base);
    uint32_t tile_s = static_cast<uint32_t>(__cvta_generic_to_shared(tile));
    uint32_t bar_s = static_cast<uint32_t>(__cvta_generic_to_shared(&bar));
    bool leader = threadIdx.x == 0 && threadIdx.y == 0;
    int x0 = (int)(blockIdx.x * box_w), y0 = (int)(blockIdx.y * box_h);

    if (leader) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar_s), "r"(1) : "memory");
        // Makes the barrier's initialization visible to the async proxy.
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncthreads();
    if (leader) {
        uint32_t bytes = box_w * box_h * (uint32_t)sizeof(float);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar_s),
                     "r"(bytes)
                     : "memory");
        asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                     " [%0], [%1, {%2, %3}], [%4];" ::"r"(tile_s),
                     "l"(reinterpret_cast<uint64_t>(&map)), "r"(x0), "r"(y0), "r"(bar_s)
                     : "memory");
    }
    uint32_t done = 0;
    while (!done)
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(bar_s), "r"(0u)
                     : "memory");

    for (unsigned int j = threadIdx.y; j < box_h; j += blockDim.y)
        for (unsigned int i = threadIdx.x; i < box_w; i += blockDim.x) {
            unsigned int x = (unsigned int)x0 + i, y = (unsigned int)y0 + j;
            if (x < width && y < height)
                out[(size_t)y * width + x] = tile[j * box_w + i];
        }
}
