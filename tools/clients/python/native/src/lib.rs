//! grove's store inside a Python process: the extension module `grove_client._native` (PyO3,
//! built by maturin when `pip install tools/clients/python` runs).
//!
//! It owns the glue between CPython and [`grove_tools::embed`], which answers every route of
//! docs/api.md in this process: `NativeStore.open` opens a store (refused with `locked`,
//! naming the holder, when another process or this one has it), `request` carries one request
//! to the routes and returns its status and whole body, `stream` returns a `NativeReply` whose
//! body is read piece by piece (streamed reads, followed replays). Every call that waits
//! releases the GIL while it does. The Python side (`grove_client/_native_transport.py`) makes
//! of it the transport the HTTP client has, so `GroveClient`, `AsyncGroveClient` and the
//! LangGraph savers run unchanged on it.
//!
//! It calls `grove_tools::embed` and nothing else of grove. Errors cross to Python as
//! `RuntimeError` whose message begins with the error code of docs/api.md (`locked: …`).

use std::sync::Arc;

use grove_tools::embed::{EmbedError, Embedded, Options, Reply};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

/// A store open in this process.
#[pyclass(module = "grove_client._native")]
struct NativeStore {
    inner: parking_lot::RwLock<Option<Arc<Embedded>>>,
}

/// An answer whose body is read piece by piece.
#[pyclass(module = "grove_client._native")]
struct NativeReply {
    #[pyo3(get)]
    status: u16,
    rest: parking_lot::Mutex<Option<Reply>>,
    runtime: tokio::runtime::Handle,
}

fn error(code: &str, message: impl std::fmt::Display) -> PyErr {
    PyRuntimeError::new_err(format!("{code}: {message}"))
}

fn embed_error(e: EmbedError) -> PyErr {
    error(e.code(), &e)
}

#[pymethods]
impl NativeStore {
    /// Opens (or makes) the store at `path` for this process.
    #[staticmethod]
    // One parameter per keyword argument of the Python method.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (path, durability=None, backend=None, cache_bytes=None, payload_threshold=None, lock_wait_seconds=None, read_only=false))]
    fn open(
        py: Python<'_>,
        path: std::path::PathBuf,
        durability: Option<&str>,
        backend: Option<&str>,
        cache_bytes: Option<u64>,
        payload_threshold: Option<usize>,
        lock_wait_seconds: Option<f64>,
        read_only: bool,
    ) -> PyResult<NativeStore> {
        let mut options = Options::new(path);
        if let Some(name) = durability {
            options.set_durability(name).map_err(embed_error)?;
        }
        if let Some(name) = backend {
            options.set_backend(name).map_err(embed_error)?;
        }
        options.cache_bytes = cache_bytes;
        options.payload_threshold = payload_threshold;
        if let Some(seconds) = lock_wait_seconds {
            options
                .set_lock_wait_seconds("lock_wait_seconds", seconds)
                .map_err(embed_error)?;
        }
        options.read_only = read_only;
        let store = py
            .detach(|| Embedded::open(&options))
            .map_err(embed_error)?;
        Ok(NativeStore {
            inner: parking_lot::RwLock::new(Some(Arc::new(store))),
        })
    }

    /// One request run to its end on this thread (GIL released); its status and whole body as
    /// text (every answer of the routes is JSON or text: `json.loads` of a `str` is quicker
    /// than of `bytes`, which it would decode first).
    #[pyo3(signature = (method, target, headers, body=None))]
    fn request<'py>(
        &self,
        py: Python<'py>,
        method: &str,
        target: &str,
        headers: Vec<(String, String)>,
        body: Option<&[u8]>,
    ) -> PyResult<(u16, Bound<'py, PyString>)> {
        let store = self.store()?;
        let body = body.map(<[u8]>::to_vec).unwrap_or_default();
        // Run right here, the GIL released: the engine's work on this thread, no hand-over.
        let (status, bytes) = py
            .detach(|| store.request_inline(method, target, &headers, body))
            .map_err(embed_error)?;
        // Not UTF-8 (no route answers so): replaced, as `bytes.decode(errors="replace")` would.
        let text = String::from_utf8_lossy(&bytes);
        Ok((status, PyString::new(py, &text)))
    }

    /// One request whose body is read piece by piece (`NativeReply.read`).
    #[pyo3(signature = (method, target, headers, body=None))]
    fn stream(
        &self,
        py: Python<'_>,
        method: &str,
        target: &str,
        headers: Vec<(String, String)>,
        body: Option<&[u8]>,
    ) -> PyResult<NativeReply> {
        let store = self.store()?;
        let body = body.map(<[u8]>::to_vec).unwrap_or_default();
        let reply = py
            .detach(|| store.request_blocking(method, target, &headers, body))
            .map_err(embed_error)?;
        Ok(NativeReply {
            status: reply.status,
            rest: parking_lot::Mutex::new(Some(reply)),
            runtime: store.runtime().handle().clone(),
        })
    }

    /// Flushes and closes the store; requests after this fail with `closed`.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let taken = self.inner.write().take();
        let Some(store) = taken else { return Ok(()) };
        match Arc::try_unwrap(store) {
            Ok(store) => py.detach(|| store.close()).map_err(embed_error),
            // A stream still being read holds it: the last one to finish closes it.
            Err(_) => Ok(()),
        }
    }
}

impl NativeStore {
    fn store(&self) -> PyResult<Arc<Embedded>> {
        self.inner
            .read()
            .clone()
            .ok_or_else(|| embed_error(EmbedError::Closed))
    }
}

#[pymethods]
impl NativeReply {
    /// The next piece of the body, None at its end.
    fn read<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyBytes>>> {
        let chunk = py
            .detach(|| {
                let mut rest = self.rest.lock();
                let Some(reply) = rest.as_mut() else {
                    return Ok(None);
                };
                let chunk = self.runtime.block_on(reply.chunk())?;
                if chunk.is_none() {
                    *rest = None;
                }
                Ok::<_, EmbedError>(chunk)
            })
            .map_err(embed_error)?;
        Ok(chunk.map(|bytes| PyBytes::new(py, &bytes)))
    }

    /// Stops reading: the rest of the body is dropped (a followed replay ends).
    fn close(&self) {
        self.rest.lock().take();
    }
}

#[pymodule]
fn _native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<NativeStore>()?;
    module.add_class::<NativeReply>()?;
    Ok(())
}
