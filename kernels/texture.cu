// NVIDIA's simpleTextureDrv transform: each thread reads, through a texture
// object with normalized coordinates (and whatever filter it was made with),
// the point of the source image that a rotation by the angle whose cosine and
// sine are c and s brings to its pixel, and writes it to out (width x height
// floats, rows packed).
extern "C" __global__ void rotate_texture(float *out, unsigned long long tex, unsigned int width,
                                          unsigned int height, float c, float s)
{
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height)
        return;
    float u = (float)x / (float)width - 0.5f;
    float v = (float)y / (float)height - 0.5f;
    float tu = u * c - v * s + 0.5f;
    float tv = v * c + u * s + 0.5f;
    out[y * width + x] = tex2D<float>((cudaTextureObject_t)tex, tu, tv);
}

// A surface write: out(x, y) = value + x + 1000 * y over a width x height
// float array, through a surface object.
extern "C" __global__ void fill_surface(unsigned long long surf, unsigned int width,
                                        unsigned int height, float value)
{
    unsigned int x = blockIdx.x * blockDim.x + threadIdx.x;
    unsigned int y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x >= width || y >= height)
        return;
    surf2Dwrite(value + (float)x + 1000.0f * (float)y, (cudaSurfaceObject_t)surf,
                (int)(x * sizeof(float)), (int)y);
}
