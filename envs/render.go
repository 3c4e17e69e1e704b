package envs

/*
#cgo LDFLAGS: -lmujoco -ldl
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <mujoco/mujoco.h>

// The few EGL 1.5 names used, as in Khronos' EGL/egl.h and EGL/eglext.h
// (declared here so that building needs no EGL headers).
typedef void* EGLDisplay;
typedef void* EGLConfig;
typedef void* EGLContext;
typedef void* EGLSurface;
typedef int EGLint;
typedef unsigned int EGLBoolean;
typedef unsigned int EGLenum;
typedef void (*__eglMustCastToProperFunctionPointerType)(void);
#define EGL_NO_DISPLAY ((EGLDisplay)0)
#define EGL_NO_CONTEXT ((EGLContext)0)
#define EGL_NO_SURFACE ((EGLSurface)0)
#define EGL_DEFAULT_DISPLAY ((void*)0)
#define EGL_ALPHA_SIZE 0x3021
#define EGL_BLUE_SIZE 0x3022
#define EGL_GREEN_SIZE 0x3023
#define EGL_RED_SIZE 0x3024
#define EGL_DEPTH_SIZE 0x3025
#define EGL_SURFACE_TYPE 0x3033
#define EGL_NONE 0x3038
#define EGL_RENDERABLE_TYPE 0x3040
#define EGL_PBUFFER_BIT 0x0001
#define EGL_OPENGL_BIT 0x0008
#define EGL_OPENGL_API 0x30A2
#define EGL_PLATFORM_SURFACELESS_MESA 0x31DD

// EGL is opened at run time (dlopen), so admpo builds and runs without it;
// only rendering needs it. RTLD_GLOBAL lets MuJoCo's GL loader find
// eglGetProcAddress.
typedef EGLDisplay (*admpo_gpd_t)(EGLenum, void*, const EGLint*);
static struct {
	int loaded;
	__eglMustCastToProperFunctionPointerType (*getProc)(const char*);
	EGLBoolean (*initialize)(EGLDisplay, EGLint*, EGLint*);
	EGLBoolean (*chooseConfig)(EGLDisplay, const EGLint*, EGLConfig*, EGLint, EGLint*);
	EGLBoolean (*bindAPI)(EGLenum);
	EGLContext (*createContext)(EGLDisplay, EGLConfig, EGLContext, const EGLint*);
	EGLBoolean (*makeCurrent)(EGLDisplay, EGLSurface, EGLSurface, EGLContext);
	EGLBoolean (*destroyContext)(EGLDisplay, EGLContext);
	EGLint (*getError)(void);
	EGLDisplay dpy;
} admpo_egl;

static const char* admpo_egl_load(const char* lib) {
	if (admpo_egl.loaded) return NULL;
	void* h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
	if (!h) return "the EGL library was not found (Debian: apt-get install libegl1 libegl-mesa0 libgl1-mesa-dri)";
	admpo_egl.getProc = dlsym(h, "eglGetProcAddress");
	admpo_egl.initialize = dlsym(h, "eglInitialize");
	admpo_egl.chooseConfig = dlsym(h, "eglChooseConfig");
	admpo_egl.bindAPI = dlsym(h, "eglBindAPI");
	admpo_egl.createContext = dlsym(h, "eglCreateContext");
	admpo_egl.makeCurrent = dlsym(h, "eglMakeCurrent");
	admpo_egl.destroyContext = dlsym(h, "eglDestroyContext");
	admpo_egl.getError = dlsym(h, "eglGetError");
	if (!admpo_egl.getProc || !admpo_egl.initialize || !admpo_egl.chooseConfig || !admpo_egl.bindAPI ||
	    !admpo_egl.createContext || !admpo_egl.makeCurrent || !admpo_egl.destroyContext || !admpo_egl.getError)
		return "libEGL.so.1 lacks EGL 1.4 functions";
	admpo_gpd_t gpd = (admpo_gpd_t)admpo_egl.getProc("eglGetPlatformDisplayEXT");
	if (!gpd) return "EGL has no eglGetPlatformDisplayEXT";
	// Mesa's surfaceless platform: no display server, software rendering
	// when there is no GPU.
	admpo_egl.dpy = gpd(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, NULL);
	EGLint maj, min;
	if (admpo_egl.dpy == EGL_NO_DISPLAY || !admpo_egl.initialize(admpo_egl.dpy, &maj, &min))
		return "EGL: no surfaceless display (Mesa's EGL: apt-get install libegl-mesa0 libgl1-mesa-dri)";
	admpo_egl.loaded = 1;
	return NULL;
}

typedef struct admpo_renderer admpo_renderer;
static void admpo_render_free(admpo_renderer* r);
struct admpo_renderer {
	EGLContext ctx;
	mjvScene scn;
	mjvCamera cam;
	mjvOption opt;
	mjrContext con;
	int made;
};

// admpo_render_new makes a GL context and MuJoCo's scene and render
// context for model m; the GL context is current on return.
static const char* admpo_render_new(mjModel* m, int w, int h, double dist, admpo_renderer** out) {
	EGLint attr[] = {EGL_SURFACE_TYPE, EGL_PBUFFER_BIT, EGL_RED_SIZE, 8, EGL_GREEN_SIZE, 8, EGL_BLUE_SIZE, 8,
	                 EGL_ALPHA_SIZE, 8, EGL_DEPTH_SIZE, 24, EGL_RENDERABLE_TYPE, EGL_OPENGL_BIT, EGL_NONE};
	EGLConfig cfg;
	EGLint n = 0;
	if (!admpo_egl.chooseConfig(admpo_egl.dpy, attr, &cfg, 1, &n) || n < 1) return "EGL: no RGBA8 + depth OpenGL config";
	if (!admpo_egl.bindAPI(EGL_OPENGL_API)) return "EGL: OpenGL API unavailable";
	admpo_renderer* r = (admpo_renderer*)calloc(1, sizeof(admpo_renderer));
	if (!r) return "out of memory";
	r->ctx = admpo_egl.createContext(admpo_egl.dpy, cfg, EGL_NO_CONTEXT, NULL);
	if (r->ctx == EGL_NO_CONTEXT) { free(r); return "EGL: cannot create an OpenGL context"; }
	if (!admpo_egl.makeCurrent(admpo_egl.dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, r->ctx)) {
		admpo_egl.destroyContext(admpo_egl.dpy, r->ctx);
		free(r);
		return "EGL: cannot make the context current";
	}
	if (m->vis.global.offwidth < w) m->vis.global.offwidth = w;
	if (m->vis.global.offheight < h) m->vis.global.offheight = h;
	mjv_defaultCamera(&r->cam);
	mjv_defaultOption(&r->opt);
	mjv_defaultScene(&r->scn);
	mjr_defaultContext(&r->con);
	mjv_makeScene(m, &r->scn, 2000);
	mjr_makeContext(m, &r->con, mjFONTSCALE_100);
	mjr_setBuffer(mjFB_OFFSCREEN, &r->con);
	r->made = 1;
	if (r->con.offWidth < w || r->con.offHeight < h) {
		admpo_render_free(r);
		return "MuJoCo's offscreen buffer is smaller than the frame";
	}
	// A free camera looking at the torso (body 1) from the side, slightly
	// above; the look-at point is set from the state at every frame.
	r->cam.type = mjCAMERA_FREE;
	r->cam.distance = dist;
	r->cam.azimuth = 90;
	r->cam.elevation = -20;
	m->vis.headlight.ambient[0] = m->vis.headlight.ambient[1] = m->vis.headlight.ambient[2] = 0.4f;
	m->vis.headlight.diffuse[0] = m->vis.headlight.diffuse[1] = m->vis.headlight.diffuse[2] = 0.7f;
	*out = r;
	return NULL;
}

static int admpo_render_current(admpo_renderer* r) {
	return admpo_egl.makeCurrent(admpo_egl.dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, r->ctx);
}

static void admpo_render_release(void) {
	admpo_egl.makeCurrent(admpo_egl.dpy, EGL_NO_SURFACE, EGL_NO_SURFACE, EGL_NO_CONTEXT);
}

// admpo_render_frame renders d's state into rgb (w*h*3, bottom row first).
static void admpo_render_frame(admpo_renderer* r, const mjModel* m, mjData* d, int w, int h, unsigned char* rgb) {
	int b = m->nbody > 1 ? 1 : 0;
	r->cam.lookat[0] = d->subtree_com[3 * b];
	r->cam.lookat[1] = d->subtree_com[3 * b + 1];
	r->cam.lookat[2] = d->subtree_com[3 * b + 2];
	mjv_updateScene(m, d, &r->opt, NULL, &r->cam, mjCAT_ALL, &r->scn);
	mjrRect vp = {0, 0, w, h};
	mjr_render(vp, &r->scn, &r->con);
	mjr_readPixels(rgb, NULL, vp, &r->con);
}

static void admpo_render_free(admpo_renderer* r) {
	if (r->made) {
		mjr_freeContext(&r->con);
		mjv_freeScene(&r->scn);
	}
	admpo_egl.destroyContext(admpo_egl.dpy, r->ctx);
	free(r);
}
*/
import "C"

import (
	"errors"
	"fmt"
	"image"
	"os"
	"runtime"
	"unsafe"
)

// ErrNoGL is the error of NewRenderer when the machine has no EGL library
// or no surfaceless EGL display to render with.
var ErrNoGL = errors.New("envs: no OpenGL context for rendering")

// Renderer draws an Env's current state offscreen with MuJoCo's OpenGL
// renderer in an EGL context (Mesa's surfaceless platform: no display
// needed, software rendering without a GPU). libEGL.so.1 (or
// $ADMPO_EGL_LIB) is loaded when the first renderer is made, so only
// rendering needs it. A Renderer is not
// safe for concurrent use.
type Renderer struct {
	env  *Env
	r    *C.admpo_renderer
	w, h int
	rgb  []byte
}

// NewRenderer makes a renderer of w x h pixel frames of e, its camera
// following the torso from the side.
func (e *Env) NewRenderer(w, h int) (*Renderer, error) {
	if w < 16 || h < 16 || w > 4096 || h > 4096 {
		return nil, fmt.Errorf("envs: frame size %dx%d: want 16 to 4096 pixels a side", w, h)
	}
	if e.back != nil {
		return nil, fmt.Errorf("envs: render: %s is a remote environment: admpo renders only its built-in tasks", e.Task.Name)
	}
	if e.sim == nil || e.sim.m == nil {
		return nil, errors.New("envs: render: the env is closed")
	}
	runtime.LockOSThread() // the GL context is current on this thread
	defer runtime.UnlockOSThread()
	lib := os.Getenv("ADMPO_EGL_LIB")
	if lib == "" {
		lib = "libEGL.so.1"
	}
	clib := C.CString(lib)
	defer C.free(unsafe.Pointer(clib))
	if msg := C.admpo_egl_load(clib); msg != nil {
		return nil, fmt.Errorf("%w: %s: %s", ErrNoGL, lib, C.GoString(msg))
	}
	var r *C.admpo_renderer
	if msg := C.admpo_render_new(e.sim.m, C.int(w), C.int(h), C.double(camDistance(e.Task.Name)), &r); msg != nil {
		C.admpo_render_release()
		return nil, fmt.Errorf("envs: render: %s", C.GoString(msg))
	}
	C.admpo_render_release()
	return &Renderer{env: e, r: r, w: w, h: h, rgb: make([]byte, w*h*3)}, nil
}

// camDistance is the camera's distance from the torso in a task.
func camDistance(task string) float64 {
	switch task {
	case "inverted-pendulum":
		return 2.5
	case "humanoid", "ant":
		return 4.5
	}
	return 3.5
}

// Frame renders the env's current state.
func (r *Renderer) Frame() (*image.RGBA, error) {
	if r.r == nil {
		return nil, errors.New("envs: render: the renderer is closed")
	}
	s := r.env.sim
	if s == nil || s.m == nil {
		return nil, errors.New("envs: render: the env is closed")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if C.admpo_render_current(r.r) == 0 {
		return nil, errors.New("envs: render: cannot make the GL context current")
	}
	C.mj_forward(s.m, s.d) // positions of the current state
	C.admpo_render_frame(r.r, s.m, s.d, C.int(r.w), C.int(r.h), (*C.uchar)(unsafe.Pointer(&r.rgb[0])))
	C.admpo_render_release()
	img := image.NewRGBA(image.Rect(0, 0, r.w, r.h))
	for y := 0; y < r.h; y++ { // OpenGL's rows run bottom-up
		src := r.rgb[(r.h-1-y)*r.w*3:]
		dst := img.Pix[y*img.Stride:]
		for x := 0; x < r.w; x++ {
			dst[4*x], dst[4*x+1], dst[4*x+2], dst[4*x+3] = src[3*x], src[3*x+1], src[3*x+2], 255
		}
	}
	return img, nil
}

// Close frees the renderer's GL and MuJoCo contexts.
func (r *Renderer) Close() {
	if r.r == nil {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if C.admpo_render_current(r.r) != 0 {
		C.admpo_render_free(r.r)
	}
	C.admpo_render_release()
	r.r = nil
}
