/*
 * A native DLPack consumer, as a C library would be: it takes a DLManagedTensorVersioned*, reads the
 * float32 values through shape, strides and byte_offset, and calls the producer's deleter when done.
 * The structs are declared here from the DLPack 1.x ABI, as libraries that vendor dlpack.h do.
 */
#include <math.h>
#include <stdint.h>
#include <stddef.h>

typedef struct { uint32_t major; uint32_t minor; } DLPackVersion;
typedef struct { int32_t device_type; int32_t device_id; } DLDevice;
typedef struct { uint8_t code; uint8_t bits; uint16_t lanes; } DLDataType;
typedef struct {
    void *data;
    DLDevice device;
    int32_t ndim;
    DLDataType dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
} DLManagedTensorVersioned;

enum { kDLCPU = 1, kDLFloat = 2, MAX_DIMS = 16 };

static void release(DLManagedTensorVersioned *t) {
    if (t->deleter != NULL) {
        t->deleter(t);
    }
}

/* The sum of a CPU float32 tensor of any shape and strides; NaN if it is not one. Takes ownership. */
double consume_sum(DLManagedTensorVersioned *t) {
    const DLTensor *x = &t->dl_tensor;
    if (t->version.major != 1 || x->device.device_type != kDLCPU || x->dtype.code != kDLFloat
            || x->dtype.bits != 32 || x->dtype.lanes != 1 || x->ndim < 0 || x->ndim > MAX_DIMS) {
        release(t);
        return NAN;
    }
    int64_t count = 1, index[MAX_DIMS] = {0}, compact[MAX_DIMS];
    for (int d = x->ndim - 1; d >= 0; d--) {
        compact[d] = count; /* NULL strides mean row-major */
        count *= x->shape[d];
    }
    const float *base = (const float *) ((const char *) x->data + x->byte_offset);
    double sum = 0;
    for (int64_t n = 0; n < count; n++) {
        int64_t offset = 0;
        for (int d = 0; d < x->ndim; d++) {
            offset += index[d] * (x->strides != NULL ? x->strides[d] : compact[d]);
        }
        sum += base[offset];
        for (int d = x->ndim - 1; d >= 0 && ++index[d] == x->shape[d]; d--) {
            index[d] = 0;
        }
    }
    release(t);
    return sum;
}
