//! Scenario files.
//!
//! A scenario is a TOML file that speaks Linux: links in `tc netem` syntax, queues as `tc`
//! command lines, host knobs by sysctl name. This crate parses and validates it
//! (`schema`), owns that vocabulary ([`sysctl`]: profiles, sysctl names and which engine
//! each configures), and builds a runnable `wirelab_sim::Sim` section by section
//! (`build`), reporting semantic errors through the same [`ScenarioError`] with the span
//! of the offending value.
//!
//! Every table denies unknown keys; every error names file, line, column and key.
#![warn(missing_docs)]

mod build;
pub mod sysctl;
mod error;
mod overrides;
mod schema;
mod tc;
mod validate;

pub use build::{capture_path, BuildOptions, Built, PROFILES};
pub use error::{key_path_at, ScenarioError};
pub use overrides::{apply_overrides, apply_overrides_located, OverrideSpans};
pub use schema::*;
pub use validate::{valid_iface_name, MAX_DURATION};

use std::path::Path;

/// A parsed scenario together with its source text (for error positions).
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The file name used in error messages.
    pub file: String,
    /// The TOML text the spans refer to (after overrides).
    pub source: String,
    /// The parsed document.
    pub doc: ScenarioFile,
    /// Node name → index, built on first lookup (large scenarios have thousands of nodes).
    node_ix: std::sync::OnceLock<std::collections::BTreeMap<String, usize>>,
    /// Where `--set` overrides landed in `source`: errors there name the override.
    overrides: OverrideSpans,
}

impl Scenario {
    /// Parses `text`; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Scenario, ScenarioError> {
        Self::parse_with(file, text, OverrideSpans::new())
    }

    fn parse_with(file: &str, text: &str, overrides: OverrideSpans) -> Result<Scenario, ScenarioError> {
        let doc: ScenarioFile = toml::from_str(text).map_err(|e| {
            let off = e.span().map(|s| s.start).unwrap_or(0);
            located(file, text, &overrides, off, e.message().trim().to_string())
        })?;
        let sc = Scenario { file: file.to_string(), source: text.to_string(), doc, node_ix: Default::default(), overrides };
        sc.validate()?;
        Ok(sc)
    }

    /// Reads and parses a file, applying `overrides` (`key=value`, see [`apply_overrides`]).
    pub fn load(path: &Path, overrides: &[String]) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            line: 0,
            col: 0,
            key: String::new(),
            message: format!("cannot read scenario file: {e}"),
        })?;
        Self::from_text(&file, &text, overrides)
    }

    /// Index of the node named `name`, if any. Uses a map built on first use and checks
    /// the hit against `doc.nodes` (which is public and could have been edited since).
    pub fn find_node(&self, name: &str) -> Option<usize> {
        let map = self.node_ix.get_or_init(|| {
            let mut m = std::collections::BTreeMap::new();
            for (i, n) in self.doc.nodes.iter().enumerate() {
                m.entry(n.name.get_ref().clone()).or_insert(i);
            }
            m
        });
        match map.get(name) {
            Some(&i) if self.doc.nodes.get(i).is_some_and(|n| n.name.get_ref() == name) => Some(i),
            _ => self.doc.nodes.iter().position(|n| n.name.get_ref() == name),
        }
    }

    /// Parses `text` after applying `overrides`.
    pub fn from_text(file: &str, text: &str, overrides: &[String]) -> Result<Scenario, ScenarioError> {
        if overrides.is_empty() {
            return Self::parse(file, text);
        }
        let (text, spans) = apply_overrides_located(file, text, overrides)?;
        Self::parse_with(file, &text, spans)
    }

    /// An error at the position of `span` (a byte range into [`Scenario::source`]); one in
    /// a value a `--set` override put there names the override instead of a line.
    pub fn error_at(&self, span: core::ops::Range<usize>, message: impl Into<String>) -> ScenarioError {
        located(&self.file, &self.source, &self.overrides, span.start, message.into())
    }
}

/// [`ScenarioError::at`], unless `offset` is inside an override's `key = value`: then the
/// error names the override (`--set KEY=VALUE`) and no line, since that text is not in the
/// user's file.
fn located(file: &str, source: &str, overrides: &OverrideSpans, offset: usize, message: String) -> ScenarioError {
    let mut e = ScenarioError::at(file, source, offset, None, message);
    if let Some((_, ov)) = overrides.iter().find(|(r, _)| r.contains(&offset)) {
        e.line = 0;
        e.col = 0;
        e.message = format!("--set `{ov}`: {}", e.message);
    }
    e
}
