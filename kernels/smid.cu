// Which SMs a launch ran on (green contexts): the first thread of each block
// reads %smid, marks seen[id] and counts each id the first time it is seen,
// so *count ends as the number of distinct SMs the launch used. Each block
// stays a little (spin cycles), so that the blocks spread over every SM the
// context may use instead of finishing on the first few.
extern "C" __global__ void sm_ids(unsigned int *seen, unsigned int nseen, unsigned int *count,
                                  long long spin)
{
    if (threadIdx.x == 0) {
        unsigned int id;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
        if (id < nseen && atomicExch(&seen[id], 1u) == 0)
            atomicAdd(count, 1u);
        long long start = clock64();
        while (clock64() - start < spin)
            ;
    }
}
