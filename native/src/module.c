/*
 * Licensed under the Apache License, Version 2.0 (the "License"); you may
 * not use this file except in compliance with the License. You may obtain
 * a copy of the License at
 *
 *      http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
 * WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
 * License for the specific language governing permissions and limitations
 * under the License.
 */

/*
 * memagg._native: the sampler for Python.  Arguments are checked here so a
 * bad one raises ValueError naming it; kernel failures raise OSError with
 * errno and a message from the C layer.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#include <limits.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ms.h"

#ifndef MADV_PAGEOUT
#define MADV_PAGEOUT 21
#endif

typedef struct {
    PyObject_HEAD
    struct ms_sampler *s;
} SamplerObject;

static PyObject *raise_errno(int ret, const char *msg)
{
    PyObject *args = Py_BuildValue("(is)", -ret, msg);

    if (args) {
        PyErr_SetObject(PyExc_OSError, args);
        Py_DECREF(args);
    }
    return NULL;
}

static int backend_index(const char *name)
{
    int i;

    if (strcmp(name, "auto") == 0) {
        return -1;
    }
    for (i = 0; i < MS_NR_BACKENDS; i++) {
        if (strcmp(name, ms_backend_names[i]) == 0) {
            return i;
        }
    }
    return -2;
}

static int Sampler_init(SamplerObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "pid", "start", "length", "n", "backend",
                              "seed", "sample_interval", "keep",
                              "split_huge_pages", NULL };
    PyObject *seed_obj = Py_None, *interval_obj = Py_None;
    long long pid, start, length, n = 1000, keep = -1;
    const char *backend = "auto";
    double interval = 0;
    uint64_t seed;
    char err[MS_ERRLEN] = "";
    int b, ret, split = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kw, "LLL|LsOOLp", kwlist, &pid,
                                     &start, &length, &n, &backend,
                                     &seed_obj, &interval_obj, &keep,
                                     &split)) {
        return -1;
    }
    if (pid <= 0 || pid > INT32_MAX) {
        PyErr_Format(PyExc_ValueError, "pid must be a positive process id, "
                     "not %lld", pid);
        return -1;
    }
    if (start < 0 || start % MS_PAGE_SIZE) {
        PyErr_Format(PyExc_ValueError, "start must be a page-aligned "
                     "(4096) address >= 0, not %lld", start);
        return -1;
    }
    if (length < (long long)MS_PAGE_SIZE || start + length < start) {
        PyErr_Format(PyExc_ValueError, "length must be at least one page "
                     "(4096 bytes), not %lld", length);
        return -1;
    }
    if (n < 1 || n > MS_MAX_SAMPLES) {
        PyErr_Format(PyExc_ValueError, "n must be between 1 and %u, not %lld",
                     MS_MAX_SAMPLES, n);
        return -1;
    }
    b = backend_index(backend);
    if (b == -2) {
        PyErr_Format(PyExc_ValueError, "backend must be 'auto', "
                     "'page_idle', 'damon_memcg', 'damon_paddr', "
                     "'damon_vaddr' or 'clear_refs', not '%s'", backend);
        return -1;
    }
    if (seed_obj != Py_None) {
        seed = PyLong_AsUnsignedLongLong(seed_obj);
        if (PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError,
                             "seed must be None or an integer in [0, 2**64)");
            return -1;
        }
    }
    if (interval_obj != Py_None) {
        interval = PyFloat_AsDouble(interval_obj);
        if (PyErr_Occurred()) {
            PyErr_Clear();
            interval = -1;
        }
    }
    if (interval_obj != Py_None && !(interval >= 0.001 && interval <= 3600)) {
        PyErr_Format(PyExc_ValueError, "sample_interval must be None "
                     "(automatic) or between 0.001 and 3600 seconds, not %R",
                     interval_obj);
        return -1;
    }
    if (keep != -1 && (keep < 1 || keep > 1000000)) {
        PyErr_Format(PyExc_ValueError, "keep must be between 1 and 1000000 "
                     "windows, not %lld", keep);
        return -1;
    }
    if (self->s) {
        ms_sampler_close(self->s);
        self->s = NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    ret = ms_sampler_open(&self->s, (pid_t)pid, (uint64_t)start,
                          (uint64_t)length, (unsigned int)n, b,
                          seed_obj != Py_None ? &seed : NULL, interval,
                          err, sizeof(err));
    Py_END_ALLOW_THREADS
    if (ret) {
        raise_errno(ret, err);
        return -1;
    }
    if (keep != -1) {
        ms_sampler_set_keep(self->s, (unsigned int)keep);
    }
    ret = ms_sampler_set_split_thp(self->s, split, err, sizeof(err));
    if (ret) {
        ms_sampler_close(self->s);
        self->s = NULL;
        raise_errno(ret, err);
        return -1;
    }
    return 0;
}

static int check_open(SamplerObject *self)
{
    if (!self->s) {
        PyErr_SetString(PyExc_ValueError, "sampler is closed");
        return -1;
    }
    return 0;
}

static PyObject *Sampler_begin(SamplerObject *self, PyObject *unused)
{
    char err[MS_ERRLEN] = "";
    int ret;

    (void)unused;
    if (check_open(self)) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    ret = ms_sampler_begin(self->s, err, sizeof(err));
    Py_END_ALLOW_THREADS
    if (ret) {
        return raise_errno(ret, err);
    }
    Py_RETURN_NONE;
}

static PyObject *Sampler_collect(SamplerObject *self, PyObject *unused)
{
    struct ms_result r;
    char err[MS_ERRLEN] = "";
    int ret;

    (void)unused;
    if (check_open(self)) {
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    ret = ms_sampler_collect(self->s, &r, err, sizeof(err));
    Py_END_ALLOW_THREADS
    if (ret) {
        return raise_errno(ret, err);
    }
    if (r.kdamond_cpu_s >= 0) {
        return Py_BuildValue(
            "{s:I,s:I,s:I,s:I,s:d,s:s,s:d,s:I,s:I,s:I,s:d,s:d,s:i,s:z}",
            "sampled", r.sampled, "accessed", r.accessed,
            "present", r.present, "moved", r.moved,
            "fraction", r.sampled ? (double)r.accessed / r.sampled : 0.0,
            "backend", ms_backend_names[ms_sampler_backend(self->s)],
            "window_s", r.window_s, "split", r.split, "huge", r.huge,
            "zero", r.zero, "split_s", r.split_s,
            "kdamond_cpu_s", r.kdamond_cpu_s, "kdamond_pid", r.kdamond_pid,
            "answer", r.answer);
    }
    return Py_BuildValue(
        "{s:I,s:I,s:I,s:I,s:d,s:s,s:d,s:I,s:I,s:I,s:d}",
        "sampled", r.sampled, "accessed", r.accessed, "present", r.present,
        "moved", r.moved,
        "fraction", r.sampled ? (double)r.accessed / r.sampled : 0.0,
        "backend", ms_backend_names[ms_sampler_backend(self->s)],
        "window_s", r.window_s, "split", r.split, "huge", r.huge,
        "zero", r.zero, "split_s", r.split_s);
}

static PyObject *Sampler_close(SamplerObject *self, PyObject *unused)
{
    struct ms_sampler *s = self->s;

    (void)unused;
    self->s = NULL;
    if (s) {
        Py_BEGIN_ALLOW_THREADS
        ms_sampler_close(s);
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

static PyObject *Sampler_get_backend(SamplerObject *self, void *closure)
{
    (void)closure;
    if (check_open(self)) {
        return NULL;
    }
    return PyUnicode_FromString(ms_backend_names[ms_sampler_backend(self->s)]);
}

static PyObject *Sampler_get_n(SamplerObject *self, void *closure)
{
    (void)closure;
    if (check_open(self)) {
        return NULL;
    }
    return PyLong_FromUnsignedLong(ms_sampler_n(self->s));
}

static PyObject *Sampler_get_draws_next(SamplerObject *self, void *closure)
{
    (void)closure;
    if (check_open(self)) {
        return NULL;
    }
    return PyBool_FromLong(ms_sampler_draws_next(self->s));
}

static int Sampler_set_n(SamplerObject *self, PyObject *value, void *closure)
{
    char err[MS_ERRLEN] = "";
    long long n;
    int ret;

    (void)closure;
    if (check_open(self)) {
        return -1;
    }
    n = value ? PyLong_AsLongLong(value) : -1;
    if (n == -1 && PyErr_Occurred()) {
        PyErr_Clear();
    }
    if (n < 1 || n > MS_MAX_SAMPLES) {
        PyErr_Format(PyExc_ValueError, "n must be an integer between 1 and "
                     "%u", MS_MAX_SAMPLES);
        return -1;
    }
    ret = ms_sampler_set_n(self->s, (unsigned int)n, err, sizeof(err));
    if (ret) {
        raise_errno(ret, err);
        return -1;
    }
    return 0;
}

static PyObject *seen_pages(SamplerObject *self, int accessed)
{
    unsigned int i, n = 0;
    uint64_t *pages;
    PyObject *t;
    int ret;

    if (check_open(self)) {
        return NULL;
    }
    pages = PyMem_Malloc(sizeof(*pages) * (ms_sampler_n(self->s) + 1));
    if (!pages) {
        return PyErr_NoMemory();
    }
    ret = ms_sampler_seen_pages(self->s, accessed, pages, &n);
    if (ret) {
        PyMem_Free(pages);
        return raise_errno(ret, "the last window has no result per sample "
                           "(per_page off, or a backend that counts only)");
    }
    t = PyTuple_New(n);
    for (i = 0; t && i < n; i++) {
        PyObject *v = PyLong_FromUnsignedLongLong(pages[i]);

        if (!v) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, v);
    }
    PyMem_Free(pages);
    return t;
}

static PyObject *Sampler_idle_pages(SamplerObject *self, PyObject *unused)
{
    (void)unused;
    return seen_pages(self, 0);
}

static PyObject *Sampler_accessed_pages(SamplerObject *self,
                                        PyObject *unused)
{
    (void)unused;
    return seen_pages(self, 1);
}

static PyObject *Sampler_get_per_page(SamplerObject *self, void *closure)
{
    (void)closure;
    (void)self;
    PyErr_SetString(PyExc_AttributeError, "per_page is write-only");
    return NULL;
}

static int Sampler_set_per_page(SamplerObject *self, PyObject *value,
                                void *closure)
{
    int on;

    (void)closure;
    if (check_open(self)) {
        return -1;
    }
    on = value ? PyObject_IsTrue(value) : 0;
    if (on < 0) {
        return -1;
    }
    ms_sampler_set_per_page(self->s, on);
    return 0;
}

static void Sampler_dealloc(SamplerObject *self)
{
    if (self->s) {
        ms_sampler_close(self->s);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Sampler_methods[] = {
    { "begin", (PyCFunction)Sampler_begin, METH_NOARGS,
      "Draw n random pages of the range and start watching them "
      "(damon_paddr: once every damon_paddr sampler of the process has "
      "begun, or at damon_commit(), the host's one kdamond watching them "
      "all; damon_memcg: a new draw joins the kept-running kdamond at the "
      "next commit, and a kept sample is counted on)." },
    { "collect", (PyCFunction)Sampler_collect, METH_NOARGS,
      "Count the watched pages accessed since begin(): a dict with "
      "sampled, accessed, present, moved, fraction, backend, window_s, "
      "split, huge, zero, split_s (and kdamond_cpu_s, kdamond_pid, answer for "
      "DAMON; damon_paddr's kdamond_cpu_s is its share of the host's "
      "kdamond, in proportion to its pages, and its answer how the "
      "kdamond told which pages were accessed: 'count', 'trace' or "
      "'regions', None for the other backends).  split: huge pages split at the window's begin() (split_s "
      "the time it took), huge: samples still under a huge page, zero: "
      "samples at the zero page (idle); 0 without split_huge_pages.  With the PFN backends "
      "(page_idle, damon_paddr) a page the host moved during the window "
      "(compaction, migration) is left out: moved counts them, present "
      "does not, and sampled leaves out the share of the drawn pages they "
      "stood for; a page the host took away (swap, balloon) counts as "
      "idle.  OSError EAGAIN when more than half of the present pages "
      "moved: the window is lost, the sampler can begin() again.  "
      "damon_memcg reports the newest window the kdamond's statistics "
      "hold (one window late; the mean of several after a skipped period) "
      "and raises EAGAIN for the window its new draw's commit landed in." },
    { "idle_pages", (PyCFunction)Sampler_idle_pages, METH_NOARGS,
      "Page numbers (address / 4096) of the samples the last collect() saw "
      "idle and in place, as a tuple.  OSError ENODATA when that window "
      "has no result per sample: per_page is off, or the backend counts "
      "only (damon_vaddr, clear_refs)." },
    { "accessed_pages", (PyCFunction)Sampler_accessed_pages, METH_NOARGS,
      "Page numbers of the samples the last collect() saw accessed and in "
      "place, as a tuple; OSError ENODATA as idle_pages()." },
    { "close", (PyCFunction)Sampler_close, METH_NOARGS,
      "Stop watching and give back kernel resources." },
    { NULL, NULL, 0, NULL },
};

static PyGetSetDef Sampler_getset[] = {
    { "backend", (getter)Sampler_get_backend, NULL,
      "Name of the backend in use.", NULL },
    { "n", (getter)Sampler_get_n, (setter)Sampler_set_n,
      "Pages sampled per window; a new n is drawn at the next begin().",
      NULL },
    { "draws_next", (getter)Sampler_get_draws_next, NULL,
      "The next begin() draws the pages anew (the sample has served its "
      "keep windows, a page moved, or n changed) rather than watch the "
      "same ones: a new n costs nothing more then.", NULL },
    { "per_page", (getter)Sampler_get_per_page,
      (setter)Sampler_set_per_page,
      "Keep each sample's own result for idle_pages() (damon_paddr then "
      "reads the accessed regions rather than a count; a damon_memcg "
      "sampler not begun yet moves to damon_paddr).", NULL },
    { NULL, NULL, NULL, NULL, NULL },
};

static PyTypeObject SamplerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "memagg._native.Sampler",
    .tp_doc = PyDoc_STR(
        "Sampler(pid, start, length, n=1000, backend='auto', seed=None, "
        "sample_interval=None, keep=32, split_huge_pages=False)\n\n"
        "Accessed-bit sampling of n random pages of [start, start+length) "
        "in process pid, drawn one per n equal slices of the range.  "
        "sample_interval (s) is how often DAMON checks each page's accessed "
        "bit during a period; None sets it from the period, as the time "
        "between begin() and collect() (1 s at first).  keep: windows a drawn "
        "sample serves at most while none of its pages moved, appeared or "
        "went (1: drawn anew every window).  split_huge_pages: split the "
        "transparent huge pages under the drawn pages (process_madvise "
        "MADV_COLD over 4 KiB of each), so that each sampled 4 KiB page "
        "has its own accessed bit; not for clear_refs."),
    .tp_basicsize = sizeof(SamplerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Sampler_init,
    .tp_dealloc = (destructor)Sampler_dealloc,
    .tp_methods = Sampler_methods,
    .tp_getset = Sampler_getset,
};

static PyObject *native_backends(PyObject *mod, PyObject *unused)
{
    PyObject *d = PyDict_New();
    int i;

    (void)mod;
    (void)unused;
    if (!d) {
        return NULL;
    }
    for (i = 0; i < MS_NR_BACKENDS; i++) {
        char reason[MS_ERRLEN] = "";
        PyObject *v;
        int ok;

        Py_BEGIN_ALLOW_THREADS
        ok = ms_backend_supported((enum ms_backend)i, reason, sizeof(reason));
        Py_END_ALLOW_THREADS
        v = Py_BuildValue("(Os)", ok ? Py_True : Py_False, reason);
        if (!v || PyDict_SetItemString(d, ms_backend_names[i], v) < 0) {
            Py_XDECREF(v);
            Py_DECREF(d);
            return NULL;
        }
        Py_DECREF(v);
    }
    return d;
}

static PyObject *native_damon_commit(PyObject *mod, PyObject *unused)
{
    char err[MS_ERRLEN] = "";
    int ret;

    (void)mod;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS
    ms_memcg_commit();
    ret = ms_damon_commit(err, sizeof(err));
    Py_END_ALLOW_THREADS
    if (ret) {
        return raise_errno(ret, err);
    }
    Py_RETURN_NONE;
}

static PyObject *native_page_out(PyObject *mod, PyObject *args)
{
    PyObject *runs, *seq;
    uint64_t *vpages = NULL, *npages = NULL;
    Py_ssize_t i, n;
    long long pid;
    int pidfd, ret;

    (void)mod;
    if (!PyArg_ParseTuple(args, "LO:page_out", &pid, &runs)) {
        return NULL;
    }
    if (pid <= 0 || pid > INT_MAX) {
        PyErr_Format(PyExc_ValueError, "pid must be a positive process id, "
                     "not %lld", pid);
        return NULL;
    }
    seq = PySequence_Fast(runs, "runs must be a sequence of (page, pages)");
    if (!seq) {
        return NULL;
    }
    n = PySequence_Fast_GET_SIZE(seq);
    vpages = PyMem_Malloc(sizeof(*vpages) * (size_t)(n + 1));
    npages = PyMem_Malloc(sizeof(*npages) * (size_t)(n + 1));
    if (!vpages || !npages) {
        PyErr_NoMemory();
        goto out;
    }
    for (i = 0; i < n; i++) {
        unsigned long long a, b;

        if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(seq, i), "KK", &a,
                              &b)) {
            goto out;
        }
        if (b == 0 || a > UINT64_MAX / MS_PAGE_SIZE - b) {
            PyErr_Format(PyExc_ValueError, "run %zd: %llu pages from page "
                         "%llu is not a range of addresses", i, b, a);
            goto out;
        }
        vpages[i] = a;
        npages[i] = b;
    }
    Py_BEGIN_ALLOW_THREADS
    pidfd = ms_pidfd_open((pid_t)pid);
    ret = pidfd < 0 ? pidfd
          : ms_madvise_pages(pidfd, vpages, npages, (unsigned int)n,
                             MADV_PAGEOUT);
    if (pidfd >= 0) {
        close(pidfd);
    }
    Py_END_ALLOW_THREADS
    if (ret) {
        raise_errno(ret, pidfd < 0 ? "cannot open a pidfd of the process"
                    : "process_madvise(MADV_PAGEOUT) refused");
        goto out;
    }
    PyMem_Free(vpages);
    PyMem_Free(npages);
    Py_DECREF(seq);
    Py_RETURN_NONE;
out:
    PyMem_Free(vpages);
    PyMem_Free(npages);
    Py_DECREF(seq);
    return NULL;
}

static PyMethodDef native_methods[] = {
    { "backends", native_backends, METH_NOARGS,
      "backends() -> {name: (supported, reason)} for every sampler backend, "
      "best first." },
    { "page_out", native_page_out, METH_VARARGS,
      "page_out(pid, runs): process_madvise(MADV_PAGEOUT) over runs "
      "[(page number, pages), ...] of process pid's memory, into the "
      "host's swap.  OSError: ESRCH when the process is gone, ENOMEM when "
      "a run is no longer mapped, EPERM without CAP_SYS_NICE over it." },
    { "damon_commit", native_damon_commit, METH_NOARGS,
      "damon_commit(): start the windows of the damon_paddr samplers begun "
      "since the host's one kdamond last restarted, without waiting for "
      "the others to begin (the kdamond restarts by itself once every "
      "damon_paddr sampler has begun).  A sampler not begun again keeps "
      "its window going.  OSError when DAMON refused the restart; the "
      "samplers whose windows it lost raise it at collect().  The pages "
      "damon_memcg samplers drew since the last commit go to their "
      "kept-running kdamond in one commit, written by a thread of its own "
      "(this call does not wait for it)." },
    { NULL, NULL, 0, NULL },
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "memagg._native",
    .m_doc = "Native accessed-bit page sampler of memagg.",
    .m_size = -1,
    .m_methods = native_methods,
};

PyMODINIT_FUNC PyInit__native(void)
{
    PyObject *m;

    if (PyType_Ready(&SamplerType) < 0) {
        return NULL;
    }
    m = PyModule_Create(&native_module);
    if (!m) {
        return NULL;
    }
    Py_INCREF(&SamplerType);
    if (PyModule_AddObject(m, "Sampler", (PyObject *)&SamplerType) < 0) {
        Py_DECREF(&SamplerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
