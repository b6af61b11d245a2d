//! The table and what goes around it: order statistics, the units, the machine's
//! description, and the text and Markdown renderings.

use crate::Args;
use std::fmt::Write as _;
use std::fs;
use std::process::Command;
use std::thread;

/// One line of the table.
pub(crate) struct Row {
    pub(crate) figure: String,
    pub(crate) tandem: String,
    pub(crate) floor: String,
    pub(crate) goal: String,
    pub(crate) met: Option<bool>,
}

/// Order statistics of a sample (nearest-rank percentiles).
pub(crate) struct Summary {
    pub(crate) min: f64,
    pub(crate) p10: f64,
    pub(crate) p50: f64,
    pub(crate) p90: f64,
    pub(crate) p99: f64,
    pub(crate) max: f64,
}

impl Summary {
    pub(crate) fn of(samples: &[f64]) -> Summary {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let at = |p: f64| {
            if sorted.is_empty() {
                return f64::NAN;
            }
            let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
            sorted[rank.clamp(1, sorted.len()) - 1]
        };
        Summary {
            min: at(0.0),
            p10: at(10.0),
            p50: at(50.0),
            p90: at(90.0),
            p99: at(99.0),
            max: at(100.0),
        }
    }
}

/// Milliseconds from nanoseconds, with precision that suits the size.
pub(crate) fn ms(ns: f64) -> String {
    let v = ns / 1e6;
    if v.abs() < 1.0 {
        format!("{v:.3} ms")
    } else if v.abs() < 100.0 {
        format!("{v:.2} ms")
    } else {
        format!("{v:.0} ms")
    }
}

pub(crate) fn ms_summary(s: &Summary) -> String {
    format!("{} [{}–{}]", ms(s.p50), ms(s.p10), ms(s.p90))
}

pub(crate) fn kib(bytes: u64) -> String {
    format!("{:.0} KiB ({bytes} B)", bytes as f64 / 1024.0)
}

pub(crate) fn kib_summary(s: &Summary) -> String {
    format!("{:.0} KiB [{:.0}–{:.0}]", s.p50, s.min, s.max)
}

/// nproc, CPU model, memory, kernel, rustc, the binary measured, load average.
pub(crate) fn describe_machine(args: &Args) -> String {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")?
                .split_once(':')
                .map(|(_, m)| m.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned());
    let cpus = thread::available_parallelism().map_or(0, |n| n.get());
    let mem = fs::read_to_string("/proc/meminfo")
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:").map(|v| v.trim().to_owned()))
        .unwrap_or_default();
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease").unwrap_or_default();
    let rustc = Command::new("rustc")
        .arg("-V")
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_else(|| "unknown".to_owned());
    let date = Command::new("date")
        .args(["-u", "+%Y-%m-%d %H:%M UTC"])
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let mut out = String::new();
    let _ = writeln!(out, "date: {date}");
    let _ = writeln!(
        out,
        "machine: {cpus} CPUs ({model}), {mem} memory, kernel {}",
        kernel.trim()
    );
    let _ = writeln!(out, "toolchain: {rustc}");
    let _ = writeln!(out, "tandem: {} ({})", args.tandem.display(), args.build);
    let _ = write!(
        out,
        "load average before: {}",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    out
}

fn met_text(met: Option<bool>) -> &'static str {
    match met {
        Some(true) => "yes",
        Some(false) => "NO",
        None => "—",
    }
}

pub(crate) fn text_table(rows: &[Row]) -> String {
    let header = ["figure", "tandem", "floor", "goal", "met"];
    let cells: Vec<[&str; 5]> = rows
        .iter()
        .map(|r| {
            [
                r.figure.as_str(),
                &r.tandem,
                &r.floor,
                &r.goal,
                met_text(r.met),
            ]
        })
        .collect();
    let mut widths = header.map(|h| h.chars().count());
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cols: [&str; 5]| {
        let mut s = String::new();
        for (i, (cell, w)) in cols.iter().zip(widths).enumerate() {
            if i > 0 {
                s += "  ";
            }
            s += cell;
            if i < 4 {
                s += &" ".repeat(w - cell.chars().count());
            }
        }
        s.trim_end().to_owned()
    };
    let mut out = line(header) + "\n";
    out += &widths.map(|w| "-".repeat(w)).join("  ");
    for row in cells {
        out += "\n";
        out += &line(row);
    }
    out
}

pub(crate) fn markdown(machine: &str, rows: &[Row], footer: &str) -> String {
    let mut out = String::from("| figure | tandem | floor | goal | met |\n|---|---|---|---|---|\n");
    for r in rows {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            r.figure,
            r.tandem,
            r.floor,
            r.goal,
            met_text(r.met)
        );
    }
    out += "\n```text\n";
    out += machine;
    out += "\n";
    out += footer;
    out += "\n```\n";
    out
}
