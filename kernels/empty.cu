// Does nothing: what a launch costs, with 0, 1 and 16 parameters of mixed sizes.
struct cusk_pair { int a; double b; };

extern "C" __global__ void empty(void) {}

extern "C" __global__ void empty1(int a) { (void)a; }

extern "C" __global__ void empty16(char c0, int i1, float f2, double d3, void *p4, short s5,
                                   unsigned long long u6, cusk_pair s7, char c8, int i9,
                                   float f10, double d11, void *p12, short s13,
                                   unsigned long long u14, int i15)
{
    (void)c0; (void)i1; (void)f2; (void)d3; (void)p4; (void)s5; (void)u6; (void)s7;
    (void)c8; (void)i9; (void)f10; (void)d11; (void)p12; (void)s13; (void)u14; (void)i15;
}
