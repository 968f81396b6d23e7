/* fake_libamdhip64.c - a stand-in for libamdhip64.so that records what kdsl asks of it, so the HIP
 * launch path (compile for gfx942, cache, code-object load, launch shape, argument packing) is
 * tested without an AMD GPU. "Device memory" is host memory, so Buffers and copies work; nothing
 * executes. One fake MI300X (gfx942, wave64, 304 CUs, 64 KiB LDS). Built by tests/CMakeLists.txt;
 * hip_fake_runtime_test.cpp loads it through KDSL_LIBAMDHIP64. Every allocation it makes stays
 * reachable until freed (LeakSanitizer runs the suites). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef int hipError_t;

static struct {
  int launches, loads, unloads, devices_seen;
  int last_image_is_elf;        /* the code object started with the ELF magic */
  int last_image_is_amdgpu;     /* ... and its e_machine was EM_AMDGPU (224) */
  char last_function[256];
  unsigned grid[3], block[3], shared;
  int params;                   /* how many parameters a launch records (the kernel's count: the runtime cannot tell) */
  uint64_t values[32];          /* each parameter's first 8 bytes (its size, where shorter) */
  int sizes[32];                /* each parameter's bytes, up to 8 (0: 8) */
  int fail_launch;              /* the next hipModuleLaunchKernel returns this when not 0 */
  char arch[64];                /* gcnArchName; "" reads as gfx942 */
} fake;

struct ihipModuleSymbol_t {
  char name[256];
  struct ihipModuleSymbol_t *next;
};
struct ihipModule_t {
  struct ihipModuleSymbol_t *functions;
};
struct ihipStream_t {
  int unused;
};
static struct ihipStream_t the_stream;

/* --- what the tests read and set ------------------------------------------------------------- */
int fake_hip_launches(void) { return fake.launches; }
int fake_hip_loads(void) { return fake.loads; }
int fake_hip_unloads(void) { return fake.unloads; }
int fake_hip_last_image_is_amdgpu_elf(void) { return fake.last_image_is_elf && fake.last_image_is_amdgpu; }
const char *fake_hip_last_function(void) { return fake.last_function; }
void fake_hip_last_shape(unsigned grid[3], unsigned block[3], unsigned *shared) {
  memcpy(grid, fake.grid, sizeof fake.grid);
  memcpy(block, fake.block, sizeof fake.block);
  *shared = fake.shared;
}
void fake_hip_record_params(int count) {
  fake.params = count < 32 ? count : 32;
  memset(fake.sizes, 0, sizeof fake.sizes);
}
/* The recorded parameters' sizes, where some are shorter than 8 bytes (a hand-written kernel's
 * float): the runtime cannot tell, and reading 8 bytes would read past them. */
void fake_hip_param_sizes(const int *sizes, int count) {
  for (int i = 0; i < count && i < 32; ++i) fake.sizes[i] = sizes[i];
}
void fake_hip_last_params(uint64_t *values) {
  for (int i = 0; i < fake.params; ++i) values[i] = fake.values[i];
}
void fake_hip_fail_next_launch(hipError_t code) { fake.fail_launch = code; }
void fake_hip_set_arch(const char *arch) { strncpy(fake.arch, arch, sizeof fake.arch - 1); }

/* --- the HIP runtime API --------------------------------------------------------------------- */
hipError_t hipInit(unsigned flags) { (void)flags; return 0; }
hipError_t hipRuntimeGetVersion(int *v) { *v = 50223153; return 0; }
hipError_t hipGetDeviceCount(int *count) { *count = 1; return 0; }
hipError_t hipSetDevice(int ordinal) { return ordinal == 0 ? 0 : 101; /* hipErrorInvalidDevice */ }
hipError_t hipDeviceGetName(char *name, int len, int ordinal) {
  (void)ordinal;
  strncpy(name, "Fake AMD Instinct MI300X", (size_t)len - 1);
  return 0;
}
hipError_t hipDeviceGetAttribute(int *value, int attribute, int ordinal) {
  (void)ordinal;
  switch (attribute) {
    case 56: *value = 1024; return 0;       /* MaxThreadsPerBlock */
    case 63: *value = 304; return 0;        /* MultiprocessorCount */
    case 74: *value = 65536; return 0;      /* MaxSharedMemoryPerBlock */
    case 87: *value = strncmp(fake.arch, "gfx11", 5) == 0 ? 32 : 64; return 0; /* WarpSize */
    default: return 1;                      /* hipErrorInvalidValue */
  }
}
/* hipDeviceProp_t of ROCm 5: the name first, gcnArchName at byte 396. */
hipError_t hipGetDeviceProperties(void *properties, int ordinal) {
  (void)ordinal;
  memset(properties, 0, 792);
  strcpy((char *)properties, "Fake AMD Instinct MI300X");
  strcpy((char *)properties + 396, fake.arch[0] ? fake.arch : "gfx942:sramecc+:xnack-");
  return 0;
}

/* The function names a code object defines: its kernel symbols are NUL-terminated strings in
 * the ELF; the fake takes every name the image contains that kdsl could ask for later, by
 * remembering the image and searching it at hipModuleGetFunction. */
struct FakeModule {
  struct ihipModule_t module;
  const unsigned char *image;
  size_t size;
  struct FakeModule *next; /* every loaded module, so that one kdsl never unloads stays reachable */
};
static struct FakeModule *loaded_modules;

static size_t elf_size(const unsigned char *image) {
  /* e_shoff + e_shnum * e_shentsize: the section table ends the file ld.lld writes. */
  uint64_t shoff;
  uint16_t shentsize, shnum;
  memcpy(&shoff, image + 0x28, 8);
  memcpy(&shentsize, image + 0x3a, 2);
  memcpy(&shnum, image + 0x3c, 2);
  return (size_t)(shoff + (uint64_t)shentsize * shnum);
}

hipError_t hipModuleLoadData(struct ihipModule_t **module, const void *image) {
  const unsigned char *bytes = (const unsigned char *)image;
  fake.last_image_is_elf = memcmp(bytes, "\x7f" "ELF", 4) == 0;
  uint16_t machine = 0;
  if (fake.last_image_is_elf) memcpy(&machine, bytes + 0x12, 2);
  fake.last_image_is_amdgpu = machine == 224;
  if (!fake.last_image_is_elf || !fake.last_image_is_amdgpu) return 200; /* hipErrorInvalidImage */
  struct FakeModule *m = calloc(1, sizeof *m);
  m->size = elf_size(bytes);
  m->image = malloc(m->size);
  memcpy((void *)m->image, bytes, m->size);
  m->next = loaded_modules;
  loaded_modules = m;
  *module = &m->module;
  ++fake.loads;
  return 0;
}

hipError_t hipModuleUnload(struct ihipModule_t *module) {
  struct FakeModule *m = (struct FakeModule *)module;
  for (struct FakeModule **at = &loaded_modules; *at; at = &(*at)->next)
    if (*at == m) {
      *at = m->next;
      break;
    }
  for (struct ihipModuleSymbol_t *f = module->functions; f;) {
    struct ihipModuleSymbol_t *next = f->next;
    free(f);
    f = next;
  }
  free((void *)m->image);
  free(m);
  ++fake.unloads;
  return 0;
}

hipError_t hipModuleGetFunction(struct ihipModuleSymbol_t **function, struct ihipModule_t *module, const char *name) {
  struct FakeModule *m = (struct FakeModule *)module;
  size_t n = strlen(name);
  int found = 0;
  for (size_t i = 0; i + n < m->size && !found; ++i)
    found = memcmp(m->image + i, name, n + 1) == 0 && (i == 0 || m->image[i - 1] == 0);
  if (!found) return 500; /* hipErrorNotFound */
  struct ihipModuleSymbol_t *f = calloc(1, sizeof *f);
  strncpy(f->name, name, sizeof f->name - 1);
  f->next = module->functions;
  module->functions = f;
  *function = f;
  return 0;
}

/* Stream capture: a launch while the stream captures is a graph node, not a launch; a
 * synchronous copy or memset then invalidates the capture (hipErrorStreamCaptureImplicit), as
 * the runtime's implicit synchronization with the capturing stream does. Launching an
 * instantiated graph counts its nodes as launches. */
static struct {
  int on, invalidated, nodes;
  int captures;                    /* captures ended into a graph */
  int graph_launches, graphs_live; /* graphs and instantiated graphs not yet destroyed */
} capture;
int fake_hip_captures(void) { return capture.captures; }
int fake_hip_graph_launches(void) { return capture.graph_launches; }
int fake_hip_graphs_live(void) { return capture.graphs_live; }
int fake_hip_capturing(void) { return capture.on; }
static hipError_t capture_implicit(void) {
  if (!capture.on) return 0;
  capture.invalidated = 1;
  return 906;
}

hipError_t hipModuleLaunchKernel(struct ihipModuleSymbol_t *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                 unsigned shared, struct ihipStream_t *stream, void **params, void **extra) {
  (void)stream;
  (void)extra;
  if (fake.fail_launch) {
    hipError_t r = fake.fail_launch;
    fake.fail_launch = 0;
    return r;
  }
  if (capture.on) capture.nodes++;
  else ++fake.launches;
  strncpy(fake.last_function, f->name, sizeof fake.last_function - 1);
  fake.grid[0] = gx, fake.grid[1] = gy, fake.grid[2] = gz;
  fake.block[0] = bx, fake.block[1] = by, fake.block[2] = bz;
  fake.shared = shared;
  for (int i = 0; i < fake.params; ++i) {
    fake.values[i] = 0;
    memcpy(&fake.values[i], params[i], fake.sizes[i] > 0 && fake.sizes[i] < 8 ? (size_t)fake.sizes[i] : 8);
  }
  return 0;
}

hipError_t hipMalloc(void **p, size_t bytes) { *p = malloc(bytes); return *p ? 0 : 2; }
hipError_t hipFree(void *p) { free(p); return 0; }
hipError_t hipMemGetInfo(size_t *free_bytes, size_t *total) { *free_bytes = (size_t)192 << 30, *total = (size_t)192 << 30; return 0; }
hipError_t hipMemset(void *p, int value, size_t bytes) { if (capture_implicit()) return 906; memset(p, value, bytes); return 0; }
hipError_t hipMemcpyHtoD(void *dst, const void *src, size_t bytes) { if (capture_implicit()) return 906; memcpy(dst, src, bytes); return 0; }
hipError_t hipMemcpyDtoH(void *dst, const void *src, size_t bytes) { if (capture_implicit()) return 906; memcpy(dst, src, bytes); return 0; }
hipError_t hipStreamCreate(struct ihipStream_t **stream) { *stream = &the_stream; return 0; }
hipError_t hipStreamSynchronize(struct ihipStream_t *stream) { (void)stream; return capture.on ? 900 : 0; }

struct ihipGraph { int nodes; };
struct hipGraphExec { int nodes; };
hipError_t hipStreamBeginCapture(struct ihipStream_t *stream, int mode) {
  (void)stream;
  if (mode != 2) return 1; /* kdsl asks for hipStreamCaptureModeRelaxed */
  if (capture.on) return 900; /* hipErrorStreamCaptureUnsupported: already capturing */
  capture.on = 1, capture.invalidated = 0, capture.nodes = 0;
  return 0;
}
hipError_t hipStreamEndCapture(struct ihipStream_t *stream, struct ihipGraph **graph) {
  (void)stream;
  if (!capture.on) return 1;
  capture.on = 0;
  *graph = NULL;
  if (capture.invalidated) return 901; /* hipErrorStreamCaptureInvalidated */
  *graph = malloc(sizeof **graph);
  (*graph)->nodes = capture.nodes;
  capture.graphs_live++;
  capture.captures++;
  return 0;
}
hipError_t hipGraphInstantiateWithFlags(struct hipGraphExec **exec, struct ihipGraph *graph, unsigned long long flags) {
  (void)flags;
  *exec = malloc(sizeof **exec);
  (*exec)->nodes = graph->nodes;
  capture.graphs_live++;
  return 0;
}
hipError_t hipGraphLaunch(struct hipGraphExec *exec, struct ihipStream_t *stream) {
  (void)stream;
  if (capture.on) return 900;
  capture.graph_launches++;
  fake.launches += exec->nodes;
  return 0;
}
hipError_t hipGraphExecDestroy(struct hipGraphExec *exec) { free(exec); capture.graphs_live--; return 0; }
hipError_t hipGraphDestroy(struct ihipGraph *graph) { free(graph); capture.graphs_live--; return 0; }

const char *hipGetErrorName(hipError_t e) {
  switch (e) {
    case 1: return "hipErrorInvalidValue";
    case 2: return "hipErrorOutOfMemory";
    case 101: return "hipErrorInvalidDevice";
    case 200: return "hipErrorInvalidImage";
    case 500: return "hipErrorNotFound";
    case 719: return "hipErrorLaunchFailure";
    case 900: return "hipErrorStreamCaptureUnsupported";
    case 901: return "hipErrorStreamCaptureInvalidated";
    case 906: return "hipErrorStreamCaptureImplicit";
    default: return "hipErrorUnknown";
  }
}
