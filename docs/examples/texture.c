/* texture: NVIDIA's simpleTextureDrv on cuscope. An image goes into a CUDA
 * array with a 2D copy, a texture object with normalized coordinates and
 * bilinear filtering reads it, a kernel rotates the image by an angle
 * through tex2D, and the result, copied back, is checked against a CPU
 * reference of the same sampling.
 *
 * Without a GPU it says so and runs on cuscope's fake driver, the kernel on
 * the CPU through a host twin that fetches with cus_fake_tex2d_float.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#include "cusk-images.h"

#define W 256u
#define H 256u
#define ANGLE 0.5f

/* The image: x * y scaled to [0, 1), a function that bilinear filtering
 * reproduces exactly, so that the check measures the sampling, not the
 * image. */
static float pixel(unsigned x, unsigned y)
{
    return ((float)x / W) * ((float)y / H);
}

/* rotate_texture(out, tex, width, height, c, s) on the host: the kernel's
 * arithmetic, thread by thread over the 2D grid, its fetch the fake's. */
static CUresult rotate_on_host(const cus_fake_launch *l, void **args, void *user)
{
    (void)user;
    float *out = (float *)(uintptr_t) * (CUdeviceptr *)args[0];
    CUtexObject tex = *(unsigned long long *)args[1];
    unsigned width = *(unsigned *)args[2], height = *(unsigned *)args[3];
    float c = *(float *)args[4], s = *(float *)args[5];
    unsigned nx = l->grid[0] * l->block[0], ny = l->grid[1] * l->block[1];
    for (unsigned y = 0; y < ny && y < height; y++)
        for (unsigned x = 0; x < nx && x < width; x++) {
            float u = (float)x / (float)width - 0.5f, v = (float)y / (float)height - 0.5f;
            out[y * width + x] =
                cus_fake_tex2d_float(tex, u * c - v * s + 0.5f, v * c + u * s + 0.5f);
        }
    return CUDA_SUCCESS;
}

/* The CPU reference: clamped bilinear sampling at normalized (u, v). */
static float texel(const float *img, long x, long y)
{
    x = x < 0 ? 0 : x >= (long)W ? (long)W - 1 : x;
    y = y < 0 ? 0 : y >= (long)H ? (long)H - 1 : y;
    return img[(size_t)y * W + (size_t)x];
}

static float sample(const float *img, float u, float v)
{
    float xb = u * W - 0.5f, yb = v * H - 0.5f;
    float fx = floorf(xb), fy = floorf(yb), a = xb - fx, b = yb - fy;
    long x = (long)fx, y = (long)fy;
    return (1 - a) * (1 - b) * texel(img, x, y) + a * (1 - b) * texel(img, x + 1, y) +
           (1 - a) * b * texel(img, x, y + 1) + a * b * texel(img, x + 1, y + 1);
}

static float image[W * H], result[W * H];

static cus_status run(bool *correct)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));
    cus_context_scope(guard, ctx);
    if (guard.status)
        return guard.status;

    cus_autoptr(cus_module) module = NULL;
    CUS_TRY(cus_module_load_data(ctx, cusk_texture.fatbin, cusk_texture.fatbin_size, NULL,
                                 &module));
    cus_autoptr(cus_function) rotate = NULL;
    CUS_TRY(cus_module_get_function(module, "rotate_texture", &rotate));

    for (unsigned y = 0; y < H; y++)
        for (unsigned x = 0; x < W; x++)
            image[y * W + x] = pixel(x, y);

    /* The image into a W x H array of floats: rows of W * 4 bytes. */
    cus_autoptr(cus_array) array = NULL;
    CUS_TRY(cus_array_create(ctx,
                             &(CUDA_ARRAY3D_DESCRIPTOR){.Width = W, .Height = H,
                                                        .Format = CU_AD_FORMAT_FLOAT,
                                                        .NumChannels = 1},
                             &array));
    CUS_TRY(cus_copy_2d(&(cus_copy_2d_desc){.dst = cus_copy_array(array, 0, 0),
                                            .src = cus_copy_host(image, W * sizeof(float)),
                                            .width_bytes = W * sizeof(float),
                                            .height = H}));

    /* Normalized coordinates, bilinear filtering, clamped at the edges; the
     * texture holds the array. */
    CUDA_TEXTURE_DESC td = cus_texture_desc(CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_LINEAR,
                                            CU_TRSF_NORMALIZED_COORDINATES);
    cus_autoptr(cus_texture) tex = NULL;
    CUS_TRY(cus_texture_create_array(array, &td, NULL, &tex));

    cus_autoptr(cus_buffer) out = NULL;
    CUS_TRY(cus_buffer_alloc_array(ctx, (size_t)W * H, sizeof(float), &out));
    /* A cus_texture * argument is passed as its CUtexObject. */
    CUS_TRY(cus_launch(rotate, CUS_DIM3(W / 16, H / 16, 1), CUS_DIM3(16, 16, 1), 0, NULL, out,
                       tex, W, H, cosf(ANGLE), sinf(ANGLE)));
    CUS_TRY(cus_copy_to_host(result, out, 0, sizeof result));

    /* The device weighs the four texels with 8-bit fractions: 1/512 of a
     * texel step at most, far below the tolerance. */
    const float tolerance = 1e-3f;
    float c = cosf(ANGLE), s = sinf(ANGLE), worst = 0;
    unsigned wrong = 0;
    for (unsigned y = 0; y < H; y++)
        for (unsigned x = 0; x < W; x++) {
            float u = (float)x / W - 0.5f, v = (float)y / H - 0.5f;
            float want = sample(image, u * c - v * s + 0.5f, v * c + u * s + 0.5f);
            float diff = fabsf(result[y * W + x] - want);
            worst = diff > worst ? diff : worst;
            if (diff > tolerance && wrong++ < 5)
                fprintf(stderr, "  (%u, %u) = %g, expected %g\n", x, y, result[y * W + x],
                        want);
        }
    printf("rotated a %ux%u image by %.2f rad through a texture: largest difference %.2g\n", W,
           H, (double)ANGLE, (double)worst);
    *correct = wrong == 0;
    if (wrong)
        fprintf(stderr, "texture: %u pixels beyond the tolerance %g\n", wrong,
                (double)tolerance);
    else
        printf("all %u pixels within %g of the CPU reference\n", W * H, (double)tolerance);
    return CUS_SUCCESS;
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver, the kernel on the CPU\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS ||
            cus_fake_register_kernel("rotate_texture", rotate_on_host, NULL) != CUS_SUCCESS ||
            cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "texture: the fake driver failed: %s\n", cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    bool correct = false;
    cus_status st = run(&correct);
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "texture: %s (%s)\n", cus_last_error_message(), cus_status_name(st));
        return 1;
    }
    if (on_fake && (st = cus_fake_uninstall()) != CUS_SUCCESS) {
        fprintf(stderr, "texture: the fake driver did not uninstall: %s\n", cus_status_name(st));
        return 1;
    }
    return correct ? 0 : 1;
}
