// Parameters of every size and alignment, each written back so that a launch
// can be checked field by field: out receives them packed as struct cusk_mixed_out.
struct cusk_triple { char c; double d; int i; };  // 24 bytes, align 8

struct cusk_mixed_out {
    long long c8, u8, i32, f32x1000, d64x1000, t_c, t_dx1000, t_i, p;
};

extern "C" __global__ void mixed(signed char c8, unsigned char u8, int i32, float f32, double d64,
                                 cusk_triple t, const int *p, long long *out)
{
    if (blockIdx.x != 0 || threadIdx.x != 0)
        return;
    out[0] = c8;
    out[1] = u8;
    out[2] = i32;
    out[3] = (long long)(f32 * 1000.0f);
    out[4] = (long long)(d64 * 1000.0);
    out[5] = t.c;
    out[6] = (long long)(t.d * 1000.0);
    out[7] = t.i;
    out[8] = p ? *p : -1;
}
