//! A run's tables handed to Python as Arrow (the Arrow C stream interface, PyCapsule
//! `arrow_array_stream`), so `wirelab.run()` gives pandas its DataFrames without writing
//! and re-parsing the CSV files (97 MB of `queue_probe.csv` for 300 s of the quickstart).
//!
//! Columns follow the CSV files exactly (same names and order; what `pd.read_csv` would
//! infer is restored on the Python side, `python/wirelab/result.py`): unsigned integers
//! become `int64` (as `read_csv` reads them), an empty CSV cell is a null. Arrow's own
//! `pyarrow` feature is built against pyo3 0.28 (we use 0.30), so the capsule is made here
//! with arrow's FFI stream and pyo3's `PyCapsule`; no pyarrow is needed to build it.
use arrow_array::builder::{Int64Builder, StringBuilder};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{ArrayRef, RecordBatch, RecordBatchIterator};
use arrow_schema::{ArrowError, Field, Schema};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use serde::Serialize;
use std::sync::{Arc, Mutex};
use wirelab_sim::record::ProbeEvent;
use wirelab_sim::RunResults;

/// The tables of one in-process run, each handed out once (`take`): the rows are freed
/// as soon as their Arrow columns are built.
#[pyclass(frozen, module = "wirelab._wirelab")]
pub struct RunTables {
    results: Mutex<RunResults>,
}

impl RunTables {
    pub fn new(results: RunResults) -> Self {
        RunTables { results: Mutex::new(results) }
    }
}

#[pymethods]
impl RunTables {
    /// The table `name` (a name of `wirelab.result.TABLES`) as an object with
    /// `__arrow_c_stream__`, or `None` if the run wrote no rows for it or it was taken
    /// before (the caller then reads the CSV file).
    fn take(&self, py: Python<'_>, name: &str) -> PyResult<Option<ArrowTable>> {
        let batch = py.detach(|| {
            let mut r = self.results.lock().unwrap_or_else(|e| e.into_inner());
            take_batch(&mut r, name)
        });
        match batch {
            Ok(b) => Ok(b.map(|batch| ArrowTable { batch })),
            Err(e) => Err(PyValueError::new_err(format!("table {name}: {e}"))),
        }
    }
}

/// One table as an Arrow record batch. Any Arrow consumer reads it through the PyCapsule
/// interface: `pyarrow.table(t)`, `polars.DataFrame(t)`, ...
#[pyclass(frozen, module = "wirelab._wirelab")]
pub struct ArrowTable {
    batch: RecordBatch,
}

#[pymethods]
impl ArrowTable {
    /// The Arrow C stream interface: a capsule holding an `ArrowArrayStream` of one batch.
    /// A `requested_schema` is ignored (allowed by the protocol: the consumer casts).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(&self, py: Python<'py>, requested_schema: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = RecordBatchIterator::new([Ok(self.batch.clone())], self.batch.schema());
        PyCapsule::new_with_value(py, FFI_ArrowArrayStream::new(Box::new(reader)), c"arrow_array_stream")
    }

    fn __len__(&self) -> usize {
        self.batch.num_rows()
    }

    /// Column names, in the order of the CSV file.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.batch.schema().fields().iter().map(|f| f.name().clone()).collect()
    }
}

/// Moves the rows of table `name` out of `r` and builds its batch (`None`: no rows).
fn take_batch(r: &mut RunResults, name: &str) -> Result<Option<RecordBatch>, String> {
    use std::mem::take;
    fn s<E: std::fmt::Display>(r: Result<Option<RecordBatch>, E>) -> Result<Option<RecordBatch>, String> {
        r.map_err(|e| e.to_string())
    }
    match name {
        "flows" => s(rows(&take(&mut r.flows))),
        "connections" => s(rows(&take(&mut r.connections))),
        "links" => s(rows(&take(&mut r.links))),
        "flow_timeseries" => s(rows(&take(&mut r.flow_series))),
        "queue_timeseries" => s(rows(&take(&mut r.queue_series))),
        "tcp_timeseries" => s(rows(&take(&mut r.tcp_series))),
        "sctp_timeseries" => s(rows(&take(&mut r.sctp_series))),
        "sctp_path_timeseries" => s(rows(&take(&mut r.sctp_path_series))),
        "tcp_rate_timeseries" => s(rows(&take(&mut r.rate_series))),
        "shim_matches" => s(rows(&take(&mut r.shim_matches))),
        "rr_latency" => s(rows(&take(&mut r.rr_latency))),
        "queues" => s(queues(&take(&mut r.queues))),
        "queue_probe" => s(probe(&take(&mut r.probe))),
        _ => Err(format!("no table named {name:?}")),
    }
}

/// Rows of a flat `Serialize` struct (the ones `output::table` writes as CSV), columns in
/// field order (`columns.rs`).
fn rows<T: Serialize>(rows: &[T]) -> Result<Option<RecordBatch>, crate::columns::Error> {
    crate::columns::to_batch(rows)
}

fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

/// `queues.csv`: a row per qdisc, then a row per class (`classid` set; `overlimits` and
/// `backlog_bytes` empty), as `output::write_all` writes it.
fn queues(qs: &[wirelab_sim::results::QueueSummary]) -> Result<Option<RecordBatch>, ArrowError> {
    if qs.is_empty() {
        return Ok(None);
    }
    let (mut dev, mut kind, mut classid) = (StringBuilder::new(), StringBuilder::new(), StringBuilder::new());
    let mut ints: [Int64Builder; 6] = Default::default();
    for q in qs {
        dev.append_value(&q.dev);
        kind.append_value(&q.kind);
        classid.append_null();
        for (b, v) in ints.iter_mut().zip([q.sent_packets, q.sent_bytes, q.drops, q.overlimits, q.qlen, q.backlog_bytes]) {
            b.append_value(i64_of(v));
        }
        for c in &q.classes {
            dev.append_value(&q.dev);
            kind.append_value("class");
            classid.append_value(&c.classid);
            for (b, v) in ints.iter_mut().zip([Some(c.packets), Some(c.bytes), Some(c.drops), None, Some(c.qlen), None]) {
                b.append_option(v.map(i64_of));
            }
        }
    }
    let mut cols: Vec<(&str, ArrayRef)> = vec![("dev", Arc::new(dev.finish())), ("kind", Arc::new(kind.finish())), ("classid", Arc::new(classid.finish()))];
    for (n, mut b) in ["sent_packets", "sent_bytes", "drops", "overlimits", "qlen", "backlog_bytes"].into_iter().zip(ints) {
        cols.push((n, Arc::new(b.finish())));
    }
    batch(cols).map(Some)
}

/// `queue_probe.csv`: one row per enqueue/dequeue/drop at a probed queue, the flow's
/// addresses dotted.
fn probe(ps: &[wirelab_sim::record::ProbeRecord]) -> Result<Option<RecordBatch>, ArrowError> {
    if ps.is_empty() {
        return Ok(None);
    }
    let n = ps.len();
    let int = |f: &dyn Fn(&wirelab_sim::record::ProbeRecord) -> u64| -> ArrayRef { Arc::new(arrow_array::Int64Array::from_iter_values(ps.iter().map(|p| i64_of(f(p))))) };
    let mut dev = StringBuilder::with_capacity(n, n * 8);
    let mut event = StringBuilder::with_capacity(n, n * 7);
    let (mut src, mut dst) = (StringBuilder::with_capacity(n, n * 9), StringBuilder::with_capacity(n, n * 9));
    // most runs have few addresses: format each of the first 64 once, later ones per row
    let mut names: Vec<([u8; 4], String)> = Vec::new();
    let mut spare = String::new();
    fn dotted<'a>(names: &'a mut Vec<([u8; 4], String)>, spare: &'a mut String, a: [u8; 4]) -> &'a str {
        let fmt = || format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
        match names.iter().position(|(k, _)| *k == a) {
            Some(i) => &names[i].1,
            None if names.len() < 64 => {
                names.push((a, fmt()));
                &names[names.len() - 1].1
            }
            None => {
                *spare = fmt();
                spare
            }
        }
    }
    for p in ps {
        dev.append_value(&p.dev);
        event.append_value(match p.event {
            ProbeEvent::Enqueue => "enqueue",
            ProbeEvent::Dequeue => "dequeue",
            ProbeEvent::Drop => "drop",
        });
        src.append_value(dotted(&mut names, &mut spare, p.flow.src));
        dst.append_value(dotted(&mut names, &mut spare, p.flow.dst));
    }
    batch(vec![
        ("time_ns", int(&|p| p.time_ns)),
        ("dev", Arc::new(dev.finish())),
        ("event", Arc::new(event.finish())),
        ("pkt_id", int(&|p| p.pkt_id)),
        ("len", int(&|p| p.len as u64)),
        ("qlen", int(&|p| p.qlen as u64)),
        ("backlog", int(&|p| p.backlog as u64)),
        ("sojourn_ns", int(&|p| p.sojourn_ns)),
        ("src", Arc::new(src.finish())),
        ("dst", Arc::new(dst.finish())),
        ("proto", int(&|p| u64::from(p.flow.proto))),
        ("sport", int(&|p| u64::from(p.flow.sport))),
        ("dport", int(&|p| u64::from(p.flow.dport))),
    ])
    .map(Some)
}

fn batch(cols: Vec<(&str, ArrayRef)>) -> Result<RecordBatch, ArrowError> {
    let fields: Vec<Field> = cols.iter().map(|(n, a)| Field::new(*n, a.data_type().clone(), a.null_count() > 0)).collect();
    RecordBatch::try_new(Arc::new(Schema::new(fields)), cols.into_iter().map(|(_, a)| a).collect())
}
