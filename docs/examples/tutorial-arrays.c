/* tutorial-arrays: pitched buffers, CUDA arrays, 2D and 3D copies, textures
 * and surfaces (docs/tutorial.md, "Arrays, 2D copies and textures").
 *
 * An image goes host -> pitched buffer -> array -> host with 2D copies, a
 * volume into a 3D array and back with 3D copies, a texture and a surface
 * are made over arrays, and the bounds checks refuse a region that leaves
 * its buffer before any driver call. Without a GPU it runs on the fake
 * driver.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <cuscope/cuscope.h>
#include <cuscope/fake.h>

#define W 100 /* floats per row: a row of 400 bytes, padded by the pitch */
#define H 60

static float image[H][W], back[H][W];
static float volume[4][8][16], volume_back[4][8][16];

static cus_status run(bool *ok)
{
    cus_device dev;
    CUS_TRY(cus_device_get(0, &dev));
    cus_autoptr(cus_context) ctx = NULL;
    CUS_TRY(cus_context_retain_primary(dev, &ctx));

    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            image[y][x] = (float)(y * 1000 + x);

    /* Rows padded to the pitch the driver picks. */
    size_t pitch = 0;
    cus_autoptr(cus_buffer) pitched = NULL;
    CUS_TRY(cus_buffer_alloc_pitch(ctx, W * sizeof(float), H, sizeof(float), &pitched, &pitch));
    printf("a %d x %d float image: rows of %zu bytes at a pitch of %zu\n", W, H,
           W * sizeof(float), pitch);

    /* host -> pitched buffer: the host rows are packed (pitch W * 4). */
    CUS_TRY(cus_copy_2d(&(cus_copy_2d_desc){.dst = cus_copy_buffer(pitched, 0, 0),
                                            .src = cus_copy_host(image, sizeof image[0]),
                                            .width_bytes = sizeof image[0],
                                            .height = H}));

    /* pitched buffer -> array: pitch 0 means the buffer's own. */
    cus_autoptr(cus_array) array = NULL;
    CUS_TRY(cus_array_create(ctx,
                             &(CUDA_ARRAY3D_DESCRIPTOR){.Width = W, .Height = H,
                                                        .Format = CU_AD_FORMAT_FLOAT,
                                                        .NumChannels = 1,
                                                        .Flags = CUDA_ARRAY3D_SURFACE_LDST},
                             &array));
    CUS_TRY(cus_copy_2d(&(cus_copy_2d_desc){.dst = cus_copy_array(array, 0, 0),
                                            .src = cus_copy_buffer(pitched, 0, 0),
                                            .width_bytes = sizeof image[0],
                                            .height = H}));

    /* array -> host, on a stream. */
    cus_autoptr(cus_stream) stream = NULL;
    CUS_TRY(cus_stream_create(ctx, CU_STREAM_NON_BLOCKING, 0, &stream));
    CUS_TRY(cus_copy_2d_async(&(cus_copy_2d_desc){.dst = cus_copy_host(back, sizeof back[0]),
                                                  .src = cus_copy_array(array, 0, 0),
                                                  .width_bytes = sizeof back[0],
                                                  .height = H},
                              stream));
    CUS_TRY(cus_stream_synchronize(stream));
    bool same_2d = memcmp(image, back, sizeof image) == 0;
    printf("host -> pitched -> array -> host: %s\n", same_2d ? "identical" : "DIFFERENT");

    /* A region that leaves the buffer is refused before the driver sees it. */
    cus_status st = cus_copy_2d(&(cus_copy_2d_desc){.dst = cus_copy_buffer(pitched, 0, 0),
                                                    .src = cus_copy_host(image, sizeof image[0]),
                                                    .width_bytes = sizeof image[0],
                                                    .height = H + 1});
    printf("one row too many: %s\n", cus_status_name(st));

    /* A volume: 16 x 8 x 4 floats into a 3D array and back. */
    for (int z = 0; z < 4; z++)
        for (int y = 0; y < 8; y++)
            for (int x = 0; x < 16; x++)
                volume[z][y][x] = (float)(z * 10000 + y * 100 + x);
    cus_autoptr(cus_array) cube = NULL;
    CUS_TRY(cus_array_create(ctx,
                             &(CUDA_ARRAY3D_DESCRIPTOR){.Width = 16, .Height = 8, .Depth = 4,
                                                        .Format = CU_AD_FORMAT_FLOAT,
                                                        .NumChannels = 1},
                             &cube));
    CUS_TRY(cus_copy_3d(&(cus_copy_3d_desc){.dst = cus_copy_array(cube, 0, 0),
                                            .src = cus_copy_host(volume, sizeof volume[0][0]),
                                            .width_bytes = sizeof volume[0][0],
                                            .height = 8,
                                            .depth = 4}));
    CUS_TRY(cus_copy_3d(&(cus_copy_3d_desc){.dst = cus_copy_host(volume_back,
                                                                 sizeof volume_back[0][0]),
                                            .src = cus_copy_array(cube, 0, 0),
                                            .width_bytes = sizeof volume[0][0],
                                            .height = 8,
                                            .depth = 4}));
    bool same_3d = memcmp(volume, volume_back, sizeof volume) == 0;
    printf("a 16 x 8 x 4 volume through a 3D array: %s\n", same_3d ? "identical" : "DIFFERENT");

    /* A texture over the array (it holds the array), and a surface. */
    CUDA_TEXTURE_DESC td = cus_texture_desc(CU_TR_ADDRESS_MODE_CLAMP, CU_TR_FILTER_MODE_POINT, 0);
    cus_autoptr(cus_texture) tex = NULL;
    CUS_TRY(cus_texture_create_array(array, &td, NULL, &tex));
    cus_autoptr(cus_surface) surf = NULL;
    CUS_TRY(cus_surface_create(array, &surf));
    CUDA_RESOURCE_DESC res;
    CUS_TRY(cus_texture_resource_desc(tex, &res));
    printf("texture %#llx and surface %#llx over array %p (the texture reads %s)\n",
           (unsigned long long)cus_texture_handle(tex), (unsigned long long)cus_surface_handle(surf),
           (void *)cus_array_handle(array),
           res.res.array.hArray == cus_array_handle(array) ? "it" : "ANOTHER");

    *ok = same_2d && same_3d && st == CUS_ERROR_OUT_OF_RANGE &&
          res.res.array.hArray == cus_array_handle(array);
    return CUS_SUCCESS;
}

int main(void)
{
    bool on_fake = false;
    if (cus_init() != CUS_SUCCESS) {
        printf("%s\n", cus_last_error_message());
        printf("no GPU here: running on cuscope's fake driver\n");
        if (cus_fake_install(NULL) != CUS_SUCCESS || cus_init() != CUS_SUCCESS) {
            fprintf(stderr, "tutorial-arrays: the fake driver failed: %s\n",
                    cus_last_error_message());
            return 1;
        }
        on_fake = true;
    }
    bool ok = false;
    cus_status st = run(&ok);
    if (st != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-arrays: %s (%s)\n", cus_last_error_message(),
                cus_status_name(st));
        return 1;
    }
    if (on_fake && cus_fake_uninstall() != CUS_SUCCESS) {
        fprintf(stderr, "tutorial-arrays: the fake driver did not uninstall\n");
        return 1;
    }
    return ok ? 0 : 1;
}
