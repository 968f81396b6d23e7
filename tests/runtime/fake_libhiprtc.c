/* fake_libhiprtc.c - a stand-in for libhiprtc.so that records what kdsl asks of it, so kdsl::hip_source (compile, cache, load,
 * launch) is tested without ROCm. "Compiling" makes a minimal AMDGPU ELF that fake_libamdhip64.c loads: the ELF header, then
 * the kernel's name as a NUL-terminated string (the fake runtime finds functions by name). A source containing "#error" fails
 * with a log naming its line; a name expression not in the source has no lowered name. Names are not mangled: the lowered
 * name of "scale<float>" is "scale<float>". Built by tests/CMakeLists.txt; hip_source_test.cpp loads it through
 * KDSL_LIBHIPRTC. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int hiprtcResult;

struct HiprtcProgram {
  char *source, *name_expression, *log;
  unsigned char *code;
  size_t code_size;
  int compiled;
};

static struct {
  int compiles;
  char last_options[1024]; /* the options of the last compile, each followed by '\n' */
} fake;

int fake_hiprtc_compiles(void) { return fake.compiles; }
const char *fake_hiprtc_last_options(void) { return fake.last_options; }

static char *copy(const char *s) {
  char *out = malloc(strlen(s) + 1);
  strcpy(out, s);
  return out;
}

const char *hiprtcGetErrorString(hiprtcResult r) {
  switch (r) {
    case 0: return "HIPRTC_SUCCESS";
    case 3: return "HIPRTC_ERROR_INVALID_INPUT";
    case 6: return "HIPRTC_ERROR_COMPILATION";
    case 10: return "HIPRTC_ERROR_NAME_EXPRESSION_NOT_VALID";
    default: return "HIPRTC_ERROR_INTERNAL_ERROR";
  }
}

hiprtcResult hiprtcVersion(int *major, int *minor) {
  *major = 6;
  *minor = 2;
  return 0;
}

hiprtcResult hiprtcCreateProgram(struct HiprtcProgram **p, const char *source, const char *name, int headers, const char **contents, const char **names) {
  (void)name, (void)headers, (void)contents, (void)names;
  *p = calloc(1, sizeof **p);
  (*p)->source = copy(source);
  (*p)->log = copy("");
  return 0;
}

hiprtcResult hiprtcDestroyProgram(struct HiprtcProgram **p) {
  free((*p)->source);
  free((*p)->name_expression);
  free((*p)->log);
  free((*p)->code);
  free(*p);
  *p = NULL;
  return 0;
}

hiprtcResult hiprtcAddNameExpression(struct HiprtcProgram *p, const char *name) {
  free(p->name_expression);
  p->name_expression = copy(name);
  return 0;
}

hiprtcResult hiprtcCompileProgram(struct HiprtcProgram *p, int count, const char **options) {
  ++fake.compiles;
  fake.last_options[0] = 0;
  for (int i = 0; i < count; ++i)
    if (strlen(fake.last_options) + strlen(options[i]) + 2 < sizeof fake.last_options) strcat(strcat(fake.last_options, options[i]), "\n");
  const char *error = strstr(p->source, "#error");
  if (error) {
    int line = 1;
    for (const char *c = p->source; c < error; ++c) line += *c == '\n';
    free(p->log);
    p->log = malloc(128);
    strcpy(p->log, "kernel.hip:");
    sprintf(p->log + strlen(p->log), "%d:2: error: #error in the source\n", line);
    return 6;
  }
  /* The ELF header fake_libamdhip64.c checks (magic, EM_AMDGPU at 0x12, e_shoff at 0x28 = the file's end), then the name. */
  const char *name = p->name_expression ? p->name_expression : "";
  size_t size = 64 + 1 + strlen(name) + 1;
  p->code = calloc(1, size);
  memcpy(p->code, "\x7f" "ELF\x02\x01\x01", 7);
  uint16_t machine = 224;
  uint64_t shoff = size;
  memcpy(p->code + 0x12, &machine, 2);
  memcpy(p->code + 0x28, &shoff, 8);
  strcpy((char *)p->code + 65, name);
  p->code_size = size;
  p->compiled = 1;
  return 0;
}

hiprtcResult hiprtcGetLoweredName(struct HiprtcProgram *p, const char *name, const char **lowered) {
  if (!p->compiled) return 9; /* HIPRTC_ERROR_NO_LOWERED_NAMES_BEFORE_COMPILATION */
  size_t base = strcspn(name, "<");
  char declared[256] = {0};
  memcpy(declared, name, base < 255 ? base : 255);
  if (!p->name_expression || strcmp(p->name_expression, name) != 0 || !strstr(p->source, declared)) return 10;
  *lowered = p->name_expression;
  return 0;
}

hiprtcResult hiprtcGetProgramLogSize(struct HiprtcProgram *p, size_t *size) {
  *size = strlen(p->log) + 1;
  return 0;
}

hiprtcResult hiprtcGetProgramLog(struct HiprtcProgram *p, char *log) {
  strcpy(log, p->log);
  return 0;
}

hiprtcResult hiprtcGetCodeSize(struct HiprtcProgram *p, size_t *size) {
  *size = p->code_size;
  return 0;
}

hiprtcResult hiprtcGetCode(struct HiprtcProgram *p, char *code) {
  memcpy(code, p->code, p->code_size);
  return 0;
}
