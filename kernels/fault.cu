// Writes through a pointer it is given: pass an address that maps nothing and
// the context dies with CUDA_ERROR_ILLEGAL_ADDRESS (sticky).
extern "C" __global__ void fault(int *bad)
{
    *bad = 42;
}
