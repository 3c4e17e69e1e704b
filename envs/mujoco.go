package envs

/*
#cgo LDFLAGS: -lmujoco
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mujoco/mujoco.h>

// MuJoCo's default warning handler prints to stdout and appends to
// MUJOCO_LOG.TXT in the working directory; admpo keeps the last warning
// instead (simulation instabilities also show in mjData.warning).
static char admpo_last_warning[512];
static void admpo_warning(const char* msg) {
	strncpy(admpo_last_warning, msg, sizeof(admpo_last_warning) - 1);
}
static void admpo_install_handlers(void) { mju_user_warning = admpo_warning; }
static const char* admpo_get_last_warning(void) { return admpo_last_warning; }

// admpo_load compiles an MJCF document held in memory through a one-file VFS.
static mjModel* admpo_load(const char* name, const char* xml, int len, char* err, int errsz) {
	mjVFS* vfs = (mjVFS*)malloc(sizeof(mjVFS));
	if (!vfs) {
		snprintf(err, errsz, "out of memory for the MuJoCo VFS");
		return NULL;
	}
	mj_defaultVFS(vfs);
	if (mj_makeEmptyFileVFS(vfs, name, len) != 0) {
		snprintf(err, errsz, "cannot add %s to the MuJoCo VFS", name);
		free(vfs);
		return NULL;
	}
	int i = mj_findFileVFS(vfs, name);
	memcpy(vfs->filedata[i], xml, len);
	mjModel* m = mj_loadXML(name, vfs, err, errsz);
	mj_deleteVFS(vfs);
	free(vfs);
	return m;
}

// admpo_load_file compiles an MJCF file from disk: its includes, meshes and
// textures resolve relative to it.
static mjModel* admpo_load_file(const char* path, char* err, int errsz) {
	return mj_loadXML(path, NULL, err, errsz);
}

static void admpo_step(const mjModel* m, mjData* d, int n) {
	for (int i = 0; i < n; i++) mj_step(m, d);
}
static double admpo_timestep(const mjModel* m) { return m->opt.timestep; }
static int admpo_joint(const mjModel* m, const char* name) { return mj_name2id(m, mjOBJ_JOINT, name); }
static int admpo_body(const mjModel* m, const char* name) { return mj_name2id(m, mjOBJ_BODY, name); }
static int admpo_joint_qposadr(const mjModel* m, int j) { return m->jnt_qposadr[j]; }
static int admpo_joint_type(const mjModel* m, int j) { return m->jnt_type[j]; }
static int admpo_bad_state_warnings(const mjData* d) {
	return d->warning[mjWARN_BADQPOS].number + d->warning[mjWARN_BADQVEL].number +
	       d->warning[mjWARN_BADQACC].number;
}
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"
)

var handlersOnce sync.Once

// MuJoCoVersion is the version string of the loaded MuJoCo library.
func MuJoCoVersion() string { return C.GoString(C.mj_versionString()) }

// sim is a compiled MuJoCo model with one data instance. Its slices are
// zero-copy views into MuJoCo's own memory and are valid until close.
type sim struct {
	m *C.mjModel
	d *C.mjData

	qpos, qvel, ctrl []float64 // views into mjData
	qaccWarm         []float64 // solver warm start, part of the exact state
	xipos            []float64 // body centre-of-mass positions, [nbody*3]
	xpos             []float64 // body frame positions, [nbody*3]
	qpos0            []float64 // view into mjModel
	bodyMass         []float64
	ctrlRange        []float64 // [nu*2]
	ctrlLimited      []uint8
	nq, nv, nu       int
	nbody            int
	timestep         float64
}

// loadSim compiles the MJCF text xml; name is used in error messages.
func loadSim(name string, xml []byte) (*sim, error) {
	handlersOnce.Do(func() { C.admpo_install_handlers() })
	if len(xml) == 0 {
		return nil, fmt.Errorf("envs: model %s is empty", name)
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	cxml := C.CBytes(xml)
	defer C.free(cxml)
	errbuf := (*C.char)(C.calloc(1024, 1))
	defer C.free(unsafe.Pointer(errbuf))
	m := C.admpo_load(cname, (*C.char)(cxml), C.int(len(xml)), errbuf, 1024)
	if m == nil {
		return nil, fmt.Errorf("envs: loading MuJoCo model %s: %s", name, C.GoString(errbuf))
	}
	return newSim(m, name)
}

// loadSimFile compiles the MJCF file at path (its includes and assets
// resolve relative to it).
func loadSimFile(path string) (*sim, error) {
	handlersOnce.Do(func() { C.admpo_install_handlers() })
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	errbuf := (*C.char)(C.calloc(1024, 1))
	defer C.free(unsafe.Pointer(errbuf))
	m := C.admpo_load_file(cpath, errbuf, 1024)
	if m == nil {
		return nil, fmt.Errorf("envs: loading MuJoCo model %s: %s", path, C.GoString(errbuf))
	}
	return newSim(m, path)
}

// newSim makes the data of a compiled model m and the views into both.
func newSim(m *C.mjModel, name string) (*sim, error) {
	d := C.mj_makeData(m)
	if d == nil {
		C.mj_deleteModel(m)
		return nil, fmt.Errorf("envs: allocating MuJoCo data for %s", name)
	}
	s := &sim{m: m, d: d, nq: int(m.nq), nv: int(m.nv), nu: int(m.nu), nbody: int(m.nbody),
		timestep: float64(C.admpo_timestep(m))}
	s.qpos = unsafe.Slice((*float64)(unsafe.Pointer(d.qpos)), s.nq)
	s.qvel = unsafe.Slice((*float64)(unsafe.Pointer(d.qvel)), s.nv)
	s.ctrl = unsafe.Slice((*float64)(unsafe.Pointer(d.ctrl)), s.nu)
	s.qaccWarm = unsafe.Slice((*float64)(unsafe.Pointer(d.qacc_warmstart)), s.nv)
	s.xipos = unsafe.Slice((*float64)(unsafe.Pointer(d.xipos)), 3*s.nbody)
	s.xpos = unsafe.Slice((*float64)(unsafe.Pointer(d.xpos)), 3*s.nbody)
	s.qpos0 = unsafe.Slice((*float64)(unsafe.Pointer(m.qpos0)), s.nq)
	s.bodyMass = unsafe.Slice((*float64)(unsafe.Pointer(m.body_mass)), s.nbody)
	s.ctrlRange = unsafe.Slice((*float64)(unsafe.Pointer(m.actuator_ctrlrange)), 2*s.nu)
	s.ctrlLimited = unsafe.Slice((*uint8)(unsafe.Pointer(m.actuator_ctrllimited)), s.nu)
	runtime.SetFinalizer(s, (*sim).close)
	return s, nil
}

// close frees MuJoCo's memory; the views become invalid.
func (s *sim) close() {
	if s.d != nil {
		C.mj_deleteData(s.d)
		s.d = nil
	}
	if s.m != nil {
		C.mj_deleteModel(s.m)
		s.m = nil
	}
	s.qpos, s.qvel, s.ctrl, s.qaccWarm, s.xipos, s.xpos, s.qpos0 = nil, nil, nil, nil, nil, nil, nil
}

// jointQpos returns the first qpos index of the joint called name and the
// number of qpos values it has (7 free, 4 ball, 1 slide or hinge); ok is
// false when the model has no such joint.
func (s *sim) jointQpos(name string) (adr, n int, ok bool) {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	j := int(C.admpo_joint(s.m, cname))
	if j < 0 {
		return 0, 0, false
	}
	n = 1
	switch C.admpo_joint_type(s.m, C.int(j)) {
	case C.mjJNT_FREE:
		n = 7
	case C.mjJNT_BALL:
		n = 4
	}
	return int(C.admpo_joint_qposadr(s.m, C.int(j))), n, true
}

// bodyID returns the index of the body called name, or -1.
func (s *sim) bodyID(name string) int {
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return int(C.admpo_body(s.m, cname))
}

// reset restores the model's initial state (qpos0, zero velocity).
func (s *sim) reset() { C.mj_resetData(s.m, s.d) }

// forward recomputes derived quantities (positions, contacts) for the current state.
func (s *sim) forward() { C.mj_forward(s.m, s.d) }

// step advances the simulation n physics steps with the current ctrl.
func (s *sim) step(n int) { C.admpo_step(s.m, s.d, C.int(n)) }

// badState reports whether MuJoCo flagged NaN/Inf or huge values in the state
// since the last reset.
func (s *sim) badState() bool { return C.admpo_bad_state_warnings(s.d) > 0 }

// lastWarning is the most recent MuJoCo warning text, if any.
func lastWarning() string { return C.GoString(C.admpo_get_last_warning()) }

var errClosed = errors.New("envs: environment is closed")
