// SPDX-License-Identifier: MIT
/*
 * probe.c - is there a GPU to run on?  selftests/gpu/run.sh builds this
 * with the C compiler alone, before anything else, so that a machine
 * without one is told so in a second, in one line.
 *
 *   probe [LIBCUDA]
 *
 * Loads the driver (LIBCUDA, default libcuda.so.1) and prints device 0
 * as one JSON line: {"kind":"device","name":...,"devices":N,"cc":"9.0",
 * "sms":...,"memory_gib":...,"uuid":...,"driver":...}.  Exit status 0;
 * 77 with "# no CUDA device: why" when there is no driver or no device;
 * 1, with {"kind":"device","ok":false,...}, when the driver is there and
 * fails.  The UUID names the GPU the same in
 * every process, whatever CUDA_VISIBLE_DEVICES says.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>

/* the entry points under the names <cuda.h> maps them to (_v2, ...) */
#define PROBE_SYMS(X)			\
	X(cuInit)			\
	X(cuDriverGetVersion)		\
	X(cuDeviceGetCount)		\
	X(cuDeviceGet)			\
	X(cuDeviceGetName)		\
	X(cuDeviceGetUuid)		\
	X(cuDeviceTotalMem)		\
	X(cuDeviceGetAttribute)

#define PROBE_STR_(x)	#x
#define PROBE_STR(x)	PROBE_STR_(x)

static struct {
#define PROBE_FIELD(name) __typeof__(&name) name;
	PROBE_SYMS(PROBE_FIELD)
#undef PROBE_FIELD
	__typeof__(&cuGetErrorString) cuGetErrorString;	/* may lack */
} fn;

static const char *err_str(CUresult r)
{
	const char *s = NULL;

	if (fn.cuGetErrorString)
		fn.cuGetErrorString(r, &s);
	return s ? s : "unknown error";
}

int main(int argc, char **argv)
{
	const char *lib = argc > 1 ? argv[1] : "libcuda.so.1";
	int n = 0, major = 0, minor = 0, sms = 0, ver = 0;
	char name[256] = "";
	size_t mem = 0;
	CUdevice dev;
	CUresult r;
	CUuuid u;
	void *dl;

	dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		printf("# no CUDA device: no NVIDIA driver (%s does not load)\n",
		       lib);
		return 77;
	}
#define PROBE_RESOLVE(name)						\
	fn.name = (__typeof__(&name))dlsym(dl, PROBE_STR(name));	\
	if (!fn.name) {							\
		printf("# no CUDA device: %s lacks %s\n", lib,		\
		       PROBE_STR(name));				\
		return 77;						\
	}
	PROBE_SYMS(PROBE_RESOLVE)
#undef PROBE_RESOLVE
	fn.cuGetErrorString = (__typeof__(&cuGetErrorString))dlsym(dl,
						"cuGetErrorString");
	r = fn.cuInit(0);
	if (r == CUDA_SUCCESS)
		r = fn.cuDeviceGetCount(&n);
	if (r == CUDA_ERROR_NO_DEVICE || (r == CUDA_SUCCESS && n < 1)) {
		printf("# no CUDA device: the driver lists none\n");
		return 77;
	}
	/* a driver that is there and fails is worth a report, not a skip */
	if (r != CUDA_SUCCESS) {
		printf("{\"kind\":\"device\",\"ok\":false,\"call\":\"cuInit\","
		       "\"error\":\"%s\",\"code\":%d}\n", err_str(r), (int)r);
		return 1;
	}
	r = fn.cuDeviceGet(&dev, 0);
	if (r == CUDA_SUCCESS)
		r = fn.cuDeviceGetName(name, sizeof(name), dev);
	if (r == CUDA_SUCCESS)
		r = fn.cuDeviceGetUuid(&u, dev);
	if (r == CUDA_SUCCESS)
		r = fn.cuDeviceTotalMem(&mem, dev);
	if (r == CUDA_SUCCESS)
		r = fn.cuDeviceGetAttribute(&major,
			CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
	if (r == CUDA_SUCCESS)
		r = fn.cuDeviceGetAttribute(&minor,
			CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
	if (r == CUDA_SUCCESS)
		r = fn.cuDeviceGetAttribute(&sms,
			CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev);
	if (r == CUDA_SUCCESS)
		r = fn.cuDriverGetVersion(&ver);
	if (r != CUDA_SUCCESS) {
		printf("{\"kind\":\"device\",\"ok\":false,\"error\":\"%s\","
		       "\"code\":%d}\n", err_str(r), (int)r);
		return 1;
	}
	for (char *p = name; *p; p++)
		if (*p == '"' || *p == '\\')
			*p = '_';
	printf("{\"kind\":\"device\",\"name\":\"%s\",\"devices\":%d,"
	       "\"cc\":\"%d.%d\",\"sms\":%d,\"memory_gib\":%.1f,"
	       "\"driver\":%d,\"uuid\":\"", name, n, major, minor, sms,
	       mem / 1073741824.0, ver);
	for (int i = 0; i < 16; i++)
		printf("%s%02x", i == 4 || i == 6 || i == 8 || i == 10 ? "-" : "",
		       (unsigned char)u.bytes[i]);
	printf("\"}\n");
	return 0;
}
