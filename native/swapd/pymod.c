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
 * memagg._swapd: memagg-swapd's C core for the console script.  run()
 * copies argv and calls sd_main with the GIL released: the daemon runs in
 * the calling thread until SIGTERM/SIGINT.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

int sd_main(int argc, char **argv);

static PyObject *swapd_run(PyObject *self, PyObject *arg)
{
    Py_ssize_t n, i;
    char **argv;
    int ret;

    (void)self;
    if (!PyList_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "argv must be a list of str");
        return NULL;
    }
    n = PyList_GET_SIZE(arg);
    if (n < 1 || n > 4096) {
        PyErr_SetString(PyExc_ValueError, "argv must hold the program name "
                        "and at most 4095 arguments");
        return NULL;
    }
    argv = PyMem_Calloc((size_t)n + 1, sizeof(char *));
    if (!argv) {
        return PyErr_NoMemory();
    }
    for (i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(arg, i);
        const char *s;

        if (!PyUnicode_Check(item)) {
            PyErr_Format(PyExc_TypeError, "argv[%zd] must be a str", i);
            goto fail;
        }
        s = PyUnicode_AsUTF8(item);
        if (!s) {
            goto fail;
        }
        /* Copies: the list may change while the daemon runs. */
        argv[i] = strdup(s);
        if (!argv[i]) {
            PyErr_NoMemory();
            goto fail;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    ret = sd_main((int)n, argv);
    Py_END_ALLOW_THREADS
    for (i = 0; i < n; i++) {
        free(argv[i]);
    }
    PyMem_Free(argv);
    return PyLong_FromLong(ret);

fail:
    for (i = 0; i < n; i++) {
        free(argv[i]);
    }
    PyMem_Free(argv);
    return NULL;
}

static PyMethodDef methods[] = {
    { "run", swapd_run, METH_O,
      "run(argv: list[str]) -> int\n\n"
      "Run memagg-swapd with argv (argv[0] is the program name) until "
      "SIGTERM or SIGINT; return its exit status." },
    { NULL, NULL, 0, NULL },
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "memagg._swapd",
    "memagg-swapd's C core: the NBD server, exports, donor store, "
    "transports.", -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__swapd(void)
{
    return PyModule_Create(&module);
}
