/* fake_libcuda.c - a stand-in for libcuda.so.1 that records what kdsl asks of it, so the CUDA launch
 * path (compile, cache, module load, launch shape, argument packing, TMA tensor map encodes) is
 * tested without a GPU.
 * "Device memory" is host memory, so Buffers and copies work; nothing executes. One fake GPU,
 * sm_90 unless a test says otherwise, 132 SMs. Built by tests/CMakeLists.txt;
 * cuda_fake_driver_test.cpp loads it, and KDSL_LIBCUDA=<it> stands it in for the driver.
 * Every allocation it makes stays reachable until freed (LeakSanitizer runs the suites). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;

struct FakeLaunch {
  char function[256];
  unsigned grid[3], block[3], shared;
  int params;
  uint64_t values[32]; /* each parameter's bytes, zero-extended */
};

static struct {
  int launches, loads, param_count;
  size_t param_sizes[32];
  int last_image_is_elf, max_dynamic_shared;
  int major, minor;         /* compute capability; 0.0 reads as 9.0 */
  int static_shared;        /* every kernel's static shared memory */
  int param_info_error;     /* cuFuncGetParamInfo's answer when not 0 */
  int fail_launch, fail_sync; /* the next cuLaunchKernel / cuStreamSynchronize returns this when not 0 */
  struct FakeLaunch last;
} fake;

/* A module owns its functions; modules stay on one list (reachable) until unloaded. */
struct CUfunc_st {
  char name[256];
  struct CUfunc_st *next;
};
struct CUmod_st {
  struct CUfunc_st *functions;
  struct CUmod_st *next;
};
static struct CUmod_st *modules;

/* Stream capture: a launch while the stream captures is a graph node, not a launch; a legacy
 * (synchronous) copy or memset then invalidates the capture, as the driver's implicit
 * synchronization with the capturing stream does. Launching an instantiated graph counts its
 * nodes as launches. */
static struct {
  int on, invalidated, nodes;
  int captures;                    /* captures ended into a graph */
  int graph_launches, graphs_live; /* graphs and instantiated graphs not yet destroyed */
} capture;
int fake_cuda_captures(void) { return capture.captures; }
int fake_cuda_graph_launches(void) { return capture.graph_launches; }
int fake_cuda_graphs_live(void) { return capture.graphs_live; }
int fake_cuda_capturing(void) { return capture.on; }
/* 906 (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT) for a legacy-stream call during a capture. */
static CUresult capture_implicit(void) {
  if (!capture.on) return 0;
  capture.invalidated = 1;
  return 906;
}

/* What the test reads and sets (looked up with dlsym). */
int fake_cuda_launches(void) { return fake.launches; }
int fake_cuda_loads(void) { return fake.loads; }
const struct FakeLaunch *fake_cuda_last_launch(void) { return &fake.last; }
int fake_cuda_last_image_is_elf(void) { return fake.last_image_is_elf; }
int fake_cuda_max_dynamic_shared(void) { return fake.max_dynamic_shared; }
/* The parameters the next kernels declare: their count and sizes (cuFuncGetParamInfo reports
 * them; a launch reads that many bytes from each parameter). */
void fake_cuda_set_params(int count, const size_t *sizes) {
  fake.param_count = count;
  for (int i = 0; i < count && i < 32; ++i) fake.param_sizes[i] = sizes[i];
}
/* The GPU the next CudaDevice opens: compute capability (10.0 for a GPU newer than sm_90). */
void fake_cuda_set_compute_capability(int major, int minor) { fake.major = major, fake.minor = minor; }
/* Every kernel's static shared memory (cuFuncGetAttribute); clears the recorded opt-in. */
void fake_cuda_set_static_shared(int bytes) { fake.static_shared = bytes, fake.max_dynamic_shared = 0; }
/* What cuFuncGetParamInfo answers for every index (0: the declared parameters). */
void fake_cuda_set_param_info_error(int code) { fake.param_info_error = code; }
/* The next cuLaunchKernel, or the next cuStreamSynchronize, fails with `code` (once). */
void fake_cuda_fail_next_launch(int code) { fake.fail_launch = code; }
void fake_cuda_fail_next_sync(int code) { fake.fail_sync = code; }

CUresult cuGetErrorName(CUresult r, const char **name) {
  switch (r) {
    case 1: *name = "CUDA_ERROR_INVALID_VALUE"; break;
    case 700: *name = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    case 701: *name = "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES"; break;
    case 901: *name = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; break;
    case 906: *name = "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT"; break;
    default: *name = "CUDA_ERROR_UNKNOWN";
  }
  return 0;
}
CUresult cuInit(unsigned flags) { return 0; }
CUresult cuDriverGetVersion(int *v) { *v = 12040; return 0; }
CUresult cuDeviceGetCount(int *n) { *n = 1; return 0; }
CUresult cuDeviceGet(int *d, int ordinal) { *d = ordinal; return 0; }
CUresult cuDeviceGetAttribute(int *v, int attribute, int device) {
  switch (attribute) {
    case 1: *v = 1024; return 0;   /* max threads per block */
    case 8: *v = 49152; return 0;  /* shared per block */
    case 10: *v = 32; return 0;    /* warp size */
    case 16: *v = 132; return 0;   /* SMs */
    case 75: *v = fake.major ? fake.major : 9; return 0;
    case 76: *v = fake.major ? fake.minor : 0; return 0;
    case 97: *v = 232448; return 0; /* shared per block, opted in */
    default: return 1;
  }
}
CUresult cuDeviceGetName(char *name, int len, int device) { snprintf(name, (size_t)len, "Fake GPU"); return 0; }
/* A fresh context per retain (a real driver shares one per GPU): each CudaDevice then stands
 * for a new process, whose in-memory kernel cache is empty and whose disk cache is shared. */
CUresult cuDevicePrimaryCtxRetain(void **ctx, int device) {
  static uintptr_t contexts; /* distinct handles, never dereferenced: nothing to free */
  *ctx = (void *)(0x10000 + 16 * ++contexts);
  return 0;
}
CUresult cuDevicePrimaryCtxRelease_v2(int device) { return 0; }
CUresult cuCtxSetCurrent(void *ctx) { return 0; }
CUresult cuCtxSynchronize(void) { return 0; }
CUresult cuModuleLoadData(struct CUmod_st **module, const void *image) {
  fake.loads++;
  fake.last_image_is_elf = memcmp(image, "\177ELF", 4) == 0;
  *module = calloc(1, sizeof **module);
  (*module)->next = modules;
  modules = *module;
  return 0;
}
CUresult cuModuleUnload(struct CUmod_st *module) {
  for (struct CUmod_st **m = &modules; *m; m = &(*m)->next)
    if (*m == module) {
      *m = module->next;
      for (struct CUfunc_st *f = module->functions, *next; f; f = next) next = f->next, free(f);
      free(module);
      return 0;
    }
  return 400; /* CUDA_ERROR_INVALID_HANDLE */
}
CUresult cuModuleGetFunction(struct CUfunc_st **f, struct CUmod_st *module, const char *name) {
  *f = calloc(1, sizeof **f);
  snprintf((*f)->name, sizeof (*f)->name, "%s", name);
  (*f)->next = module->functions;
  module->functions = *f;
  return 0;
}
CUresult cuFuncSetAttribute(struct CUfunc_st *f, int attribute, int value) {
  if (attribute == 8) fake.max_dynamic_shared = value;
  return 0;
}
CUresult cuFuncGetAttribute(int *value, int attribute, struct CUfunc_st *f) {
  if (attribute != 1) return 1; /* only CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES */
  *value = fake.static_shared;
  return 0;
}
CUresult cuFuncGetParamInfo(struct CUfunc_st *f, size_t index, size_t *offset, size_t *size) {
  if (fake.param_info_error) return fake.param_info_error;
  if ((int)index >= fake.param_count) return 1;
  *offset = 0;
  *size = fake.param_sizes[index];
  return 0;
}
/* cuTensorMapEncodeTiled's calls as kdsl made them (the last 8 kept, by serial number), each
 * refused where the real driver documents a refusal, and a map a test recognizes written. */
struct FakeTensorMapEncode {
  uint64_t serial; /* 1 for the process's first call */
  int data_type;
  unsigned rank;
  uint64_t address;
  uint64_t dims[5], strides[4];
  unsigned box[5], element_strides[5];
  int interleave, swizzle, l2_promotion, oob_fill;
};
static struct FakeTensorMapEncode fake_encodes[8];
static uint64_t fake_encode_count;
static int fake_fail_encode;
uint64_t fake_cuda_tensor_map_encodes(void) { return fake_encode_count; }
/* The call numbered `serial`, or NULL where it is not among the last 8. */
const struct FakeTensorMapEncode *fake_cuda_tensor_map_encode(uint64_t serial) {
  if (serial == 0 || serial > fake_encode_count || fake_encode_count - serial >= 8) return NULL;
  return &fake_encodes[serial % 8];
}
/* The next cuTensorMapEncodeTiled fails with `code` (once). */
void fake_cuda_fail_next_tensor_map_encode(int code) { fake_fail_encode = code; }
/* The map's 128 bytes: "FAKETMAP", the call's serial number, its address, then 0xA5. */
CUresult cuTensorMapEncodeTiled(void *map, int data_type, unsigned rank, void *address, const uint64_t *dims, const uint64_t *strides,
                                const unsigned *box, const unsigned *element_strides, int interleave, int swizzle, int l2_promotion, int oob_fill) {
  if (fake_fail_encode) {
    CUresult r = fake_fail_encode;
    fake_fail_encode = 0;
    return r;
  }
  if ((uintptr_t)map % 64 || rank < 1 || rank > 5 || (uintptr_t)address % 16) return 1; /* CUDA_ERROR_INVALID_VALUE */
  for (unsigned i = 0; i < rank; ++i)
    if (dims[i] == 0 || dims[i] > ((uint64_t)1 << 32) || box[i] == 0 || box[i] > 256) return 1;
  for (unsigned i = 0; i + 1 < rank; ++i)
    if (strides[i] % 16 || strides[i] >= ((uint64_t)1 << 40)) return 1;
  struct FakeTensorMapEncode *e = &fake_encodes[++fake_encode_count % 8];
  memset(e, 0, sizeof *e);
  e->serial = fake_encode_count;
  e->data_type = data_type, e->rank = rank, e->address = (uint64_t)(uintptr_t)address;
  for (unsigned i = 0; i < rank; ++i) e->dims[i] = dims[i], e->box[i] = box[i], e->element_strides[i] = element_strides[i];
  for (unsigned i = 0; i + 1 < rank; ++i) e->strides[i] = strides[i];
  e->interleave = interleave, e->swizzle = swizzle, e->l2_promotion = l2_promotion, e->oob_fill = oob_fill;
  unsigned char *bytes = map;
  memset(bytes, 0xA5, 128);
  memcpy(bytes, "FAKETMAP", 8);
  memcpy(bytes + 8, &e->serial, 8);
  memcpy(bytes + 16, &e->address, 8);
  return 0;
}

/* The last launch's parameters as cuLaunchKernel got them: each pointer, and up to 128 bytes
 * (a tensor map's size) read through it, for as many parameters as the kernel declares. */
static const void *fake_param_pointers[32];
static unsigned char fake_param_bytes[32][128];
/* Whether `bytes` at p can be read: a launch passing fewer parameters than the kernel declares
 * leaves stray pointers past its array, and a test should see a wrong map, not a crash. A
 * pipe's write fails with EFAULT instead of faulting. */
static int readable(const void *p, size_t bytes) {
  static int probe[2] = {-1, -1};
  if (probe[0] < 0 && pipe(probe) != 0) return 1;
  if (write(probe[1], p, bytes) != (ssize_t)bytes) return 0;
  char drain[128];
  return read(probe[0], drain, bytes) == (ssize_t)bytes;
}
const void *fake_cuda_last_param_pointer(int index) { return index >= 0 && index < 32 ? fake_param_pointers[index] : NULL; }
const unsigned char *fake_cuda_last_param_bytes(int index) { return index >= 0 && index < 32 ? fake_param_bytes[index] : NULL; }

CUresult cuLaunchKernel(struct CUfunc_st *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, unsigned shared,
                        void *stream, void **params, void **extra) {
  /* KDSL_FAKE_CUDA_FAIL_LAUNCH=<n>: the n-th launch of the process fails (for tools run as a whole). */
  static int launch_number, fail_at = -1;
  if (fail_at < 0) fail_at = getenv("KDSL_FAKE_CUDA_FAIL_LAUNCH") ? atoi(getenv("KDSL_FAKE_CUDA_FAIL_LAUNCH")) : 0;
  if (++launch_number == fail_at) return 701; /* CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES */
  if (fake.fail_launch) {
    CUresult r = fake.fail_launch;
    fake.fail_launch = 0;
    return r;
  }
  struct FakeLaunch *l = &fake.last;
  memset(l, 0, sizeof *l);
  memcpy(l->function, f->name, sizeof l->function);
  l->grid[0] = gx, l->grid[1] = gy, l->grid[2] = gz;
  l->block[0] = bx, l->block[1] = by, l->block[2] = bz;
  l->shared = shared;
  l->params = fake.param_count;
  memset(fake_param_bytes, 0, sizeof fake_param_bytes);
  for (int i = 0; i < 32; ++i) fake_param_pointers[i] = i < fake.param_count ? params[i] : NULL;
  for (int i = 0; i < fake.param_count && i < 32; ++i) {
    size_t size = fake.param_sizes[i] < 128 ? fake.param_sizes[i] : 128;
    if (size > 8 && !readable(params[i], size)) continue; /* left zero */
    memcpy(&l->values[i], params[i], size < 8 ? size : 8);
    memcpy(fake_param_bytes[i], params[i], size);
  }
  if (capture.on) capture.nodes++;
  else fake.launches++;
  return 0;
}
/* "Device" memory is host memory; allocations and copies are counted for the tests. */
static long long fake_allocs, fake_htod_bytes, fake_dtoh_bytes;
long long fake_cuda_allocs(void) { return fake_allocs; }
long long fake_cuda_htod_bytes(void) { return fake_htod_bytes; }
long long fake_cuda_dtoh_bytes(void) { return fake_dtoh_bytes; }
CUresult cuMemAlloc_v2(uint64_t *p, size_t bytes) {
  fake_allocs++;
  *p = (uint64_t)(uintptr_t)aligned_alloc(256, (bytes + 255) / 256 * 256);
  return 0;
}
CUresult cuMemFree_v2(uint64_t p) { free((void *)(uintptr_t)p); return 0; }
CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total_bytes) {
  *free_bytes = (size_t)1 << 30; /* 1 GiB of a 2 GiB "GPU" */
  *total_bytes = (size_t)2 << 30;
  return 0;
}
CUresult cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t n) { if (capture_implicit()) return 906; fake_htod_bytes += (long long)n; memcpy((void *)(uintptr_t)dst, src, n); return 0; }
CUresult cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t n) { if (capture_implicit()) return 906; fake_dtoh_bytes += (long long)n; memcpy(dst, (const void *)(uintptr_t)src, n); return 0; }
CUresult cuMemcpyDtoD_v2(uint64_t dst, uint64_t src, size_t n) { if (capture_implicit()) return 906; memcpy((void *)(uintptr_t)dst, (const void *)(uintptr_t)src, n); return 0; }
CUresult cuMemsetD8_v2(uint64_t dst, unsigned char v, size_t n) { if (capture_implicit()) return 906; memset((void *)(uintptr_t)dst, v, n); return 0; }
CUresult cuStreamCreate(void **s, unsigned flags) { static int stream; *s = &stream; return 0; }
CUresult cuStreamDestroy_v2(void *s) { return 0; }
CUresult cuStreamSynchronize(void *s) {
  CUresult r = fake.fail_sync;
  fake.fail_sync = 0;
  return r;
}
CUresult cuEventCreate(void **e, unsigned flags) { static int events[2], next; *e = &events[next++ % 2]; return 0; }
CUresult cuEventRecord(void *e, void *s) { return 0; }
CUresult cuEventSynchronize(void *e) { return 0; }
CUresult cuEventElapsedTime(float *ms, void *a, void *b) { *ms = 0; return 0; }
CUresult cuEventDestroy_v2(void *e) { return 0; }

struct CUgraph_st { int nodes; };
struct CUgraphExec_st { int nodes; };
/* The next cuStreamBeginCapture fails with `code` (once). */
static int fail_capture;
void fake_cuda_fail_next_capture(int code) { fail_capture = code; }
CUresult cuStreamBeginCapture_v2(void *s, int mode) {
  if (fail_capture) {
    CUresult r = fail_capture;
    fail_capture = 0;
    return r;
  }
  if (capture.on) return 900; /* CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: already capturing */
  capture.on = 1, capture.invalidated = 0, capture.nodes = 0;
  return 0;
}
CUresult cuStreamEndCapture(void *s, struct CUgraph_st **graph) {
  if (!capture.on) return 1;
  capture.on = 0;
  *graph = NULL;
  if (capture.invalidated) return 901; /* CUDA_ERROR_STREAM_CAPTURE_INVALIDATED */
  *graph = malloc(sizeof **graph);
  (*graph)->nodes = capture.nodes;
  capture.graphs_live++;
  capture.captures++;
  return 0;
}
CUresult cuGraphInstantiateWithFlags(struct CUgraphExec_st **exec, struct CUgraph_st *graph, unsigned long long flags) {
  *exec = malloc(sizeof **exec);
  (*exec)->nodes = graph->nodes;
  capture.graphs_live++;
  return 0;
}
CUresult cuGraphLaunch(struct CUgraphExec_st *exec, void *s) {
  if (capture.on) return 900;
  capture.graph_launches++;
  fake.launches += exec->nodes;
  return 0;
}
CUresult cuGraphExecDestroy(struct CUgraphExec_st *exec) { free(exec); capture.graphs_live--; return 0; }
CUresult cuGraphDestroy(struct CUgraph_st *graph) { free(graph); capture.graphs_live--; return 0; }
