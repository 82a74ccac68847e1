//! Block I/O traces people share, as CSV: one request per line.
//!
//! | format | columns | units |
//! |---|---|---|
//! | `msr` | `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime` | Windows filetime (100 ns) for the times; bytes; `Read` or `Write` (MSR Cambridge, FAST 2008; SNIA's copy is the same) |
//! | `tencent` | `Timestamp,Offset,Size,IOType,VolumeID` | Unix seconds; 512-byte sectors; 0 read, 1 write (Tencent CBS, ATC 2020) |
//! | `alibaba` | `device_id,opcode,offset,length,timestamp` | bytes; `R` or `W`; microseconds (Alibaba block traces, 2020) |
//!
//! A first line that starts with a letter is a header and is skipped;
//! empty lines are skipped. Times are kept relative to the first request.
//! A malformed line is an error naming the file, the line and the field.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::trace::lines::Lines;

/// A block-trace layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BlockFormat {
    Msr,
    Tencent,
    Alibaba,
}

/// One request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BlockRequest {
    /// Nanoseconds after the first request.
    pub time_ns: u64,
    /// Index into the trace's devices.
    pub device: u32,
    pub write: bool,
    /// Byte offset on the device, and bytes.
    pub offset: u64,
    pub bytes: u64,
    /// The response time the trace recorded (MSR only), in nanoseconds.
    pub response_ns: Option<u64>,
}

/// A block trace read whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct BlockTrace {
    pub requests: Vec<BlockRequest>,
    /// The devices' names: MSR's `host.disk`, the others' ids.
    pub devices: Vec<String>,
}

impl BlockFormat {
    fn columns(self) -> &'static [&'static str] {
        match self {
            BlockFormat::Msr => &["Timestamp", "Hostname", "DiskNumber", "Type", "Offset", "Size", "ResponseTime"],
            BlockFormat::Tencent => &["Timestamp", "Offset", "Size", "IOType", "VolumeID"],
            BlockFormat::Alibaba => &["device_id", "opcode", "offset", "length", "timestamp"],
        }
    }
}

/// What one line says: its time in ns (absolute), its device's name (MSR's
/// host and disk, the others' one id), and the request.
struct Parsed<'a> {
    time_ns: u64,
    device: (&'a str, Option<&'a str>),
    write: bool,
    offset: u64,
    bytes: u64,
    response_ns: Option<u64>,
}

/// Read the block trace at `path` in `format`.
pub fn read(path: &Path, format: BlockFormat) -> Result<BlockTrace> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| Error::io(&name, e))?;
    read_from(file, name, format)
}

/// Read a block trace from `src`, named `name` in errors.
pub fn read_from(src: impl Read, name: String, format: BlockFormat) -> Result<BlockTrace> {
    let mut lines = Lines::new(src, name);
    let mut out = BlockTrace::default();
    let mut first: Option<u64> = None;
    let columns = format.columns();
    while lines.advance()? {
        let line = std::str::from_utf8(lines.line()).map_err(|_| lines.error_at(0, "not text (UTF-8)"))?;
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').map(str::trim).collect();
        if out.requests.is_empty() && fields[0].starts_with(|c: char| c.is_ascii_alphabetic()) {
            continue; // a header
        }
        if fields.len() != columns.len() {
            let message = format!("expected {} fields ({}), found {}", columns.len(), columns.join(","), fields.len());
            return Err(lines.error_at(0, message));
        }
        let col = |i: usize| line.split(',').take(i).map(|f| f.len() + 1).sum::<usize>();
        let parsed = parse(format, &fields).map_err(|(i, message)| lines.error_at(col(i), message))?;
        let start = *first.get_or_insert(parsed.time_ns);
        let Some(time_ns) = parsed.time_ns.checked_sub(start) else {
            return Err(lines.error_at(col(time_column(format)), "a request earlier than the trace's first"));
        };
        let device = match out.devices.iter().position(|d| names(d, parsed.device)) {
            Some(d) => d as u32,
            None => {
                out.devices.push(match parsed.device {
                    (host, Some(disk)) => format!("{host}.{disk}"),
                    (id, None) => id.to_string(),
                });
                out.devices.len() as u32 - 1
            }
        };
        let Parsed { write, offset, bytes, response_ns, .. } = parsed;
        out.requests.push(BlockRequest { time_ns, device, write, offset, bytes, response_ns });
    }
    Ok(out)
}

/// Whether `name` is the device `(host, disk)` (`host.disk`) or `(id, None)`.
fn names(name: &str, device: (&str, Option<&str>)) -> bool {
    match device {
        (id, None) => name == id,
        (host, Some(disk)) => {
            name.len() == host.len() + 1 + disk.len()
                && name.starts_with(host)
                && name[host.len()..].starts_with('.')
                && name.ends_with(disk)
        }
    }
}

fn time_column(format: BlockFormat) -> usize {
    match format {
        BlockFormat::Alibaba => 4,
        _ => 0,
    }
}

/// One line's fields; an error names the field (its index) and the problem.
fn parse<'a>(format: BlockFormat, f: &[&'a str]) -> std::result::Result<Parsed<'a>, (usize, String)> {
    let columns = format.columns();
    let number = |i: usize| -> std::result::Result<u64, (usize, String)> {
        f[i].parse::<u64>().map_err(|_| (i, format!("{}: cannot read '{}' as a whole number", columns[i], f[i])))
    };
    let scaled = |i: usize, by: u64| -> std::result::Result<u64, (usize, String)> {
        number(i)?.checked_mul(by).ok_or_else(|| (i, format!("{}: {} is out of range", columns[i], f[i])))
    };
    let kind = |i: usize, read: &[&str], write: &[&str]| -> std::result::Result<bool, (usize, String)> {
        let t = f[i];
        if read.iter().any(|r| t.eq_ignore_ascii_case(r)) {
            Ok(false)
        } else if write.iter().any(|w| t.eq_ignore_ascii_case(w)) {
            Ok(true)
        } else {
            let expected = format!("{} or {}", read[0], write[0]);
            Err((i, format!("{}: unknown request type '{t}' (expected {expected})", columns[i])))
        }
    };
    Ok(match format {
        BlockFormat::Msr => {
            number(2)?; // the disk number is a number
            Parsed {
                time_ns: scaled(0, 100)?,
                device: (f[1], Some(f[2])),
                write: kind(3, &["Read"], &["Write"])?,
                offset: number(4)?,
                bytes: number(5)?,
                response_ns: Some(scaled(6, 100)?),
            }
        }
        BlockFormat::Tencent => Parsed {
            time_ns: scaled(0, 1_000_000_000)?,
            device: (f[4], None),
            write: kind(3, &["0"], &["1"])?,
            offset: scaled(1, 512)?,
            bytes: scaled(2, 512)?,
            response_ns: None,
        },
        BlockFormat::Alibaba => Parsed {
            time_ns: scaled(4, 1000)?,
            device: (f[0], None),
            write: kind(1, &["R"], &["W"])?,
            offset: number(2)?,
            bytes: number(3)?,
            response_ns: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_text(text: &str, format: BlockFormat) -> Result<BlockTrace> {
        read_from(text.as_bytes(), "t.csv".into(), format)
    }

    #[test]
    fn msr_times_are_filetime_and_devices_are_host_and_disk() {
        let text = "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime\n\
                    128166372003061629,hm,1,Read,3202093056,4096,1556\n\
                    128166372003081629,hm,0,Write,1024,512,20\n\
                    128166372003091629,hm,1,read,0,8192,10\n";
        let t = parse_text(text, BlockFormat::Msr).unwrap();
        assert_eq!(t.devices, ["hm.1", "hm.0"]);
        let r = &t.requests;
        // 20,000 filetime ticks of 100 ns: 2 ms.
        assert_eq!((r[1].time_ns, r[2].time_ns), (2_000_000, 3_000_000));
        assert_eq!((r[0].device, r[1].device, r[2].device), (0, 1, 0));
        assert_eq!((r[0].write, r[1].write, r[2].write), (false, true, false));
        assert_eq!((r[0].offset, r[0].bytes, r[0].response_ns), (3_202_093_056, 4096, Some(155_600)));
    }

    #[test]
    fn tencent_counts_sectors_and_seconds_alibaba_bytes_and_microseconds() {
        let t = parse_text("1538323200,2048,8,0,1283\n1538323201,0,1,1,1283\n", BlockFormat::Tencent).unwrap();
        let r = &t.requests;
        assert_eq!((r[0].offset, r[0].bytes, r[0].write), (2048 * 512, 8 * 512, false));
        assert_eq!((r[1].time_ns, r[1].write, t.devices.len()), (1_000_000_000, true, 1));
        let a = parse_text(
            "device_id,opcode,offset,length,timestamp\n3,W,4096,16384,1577808000000000\n3,R,0,4096,1577808000000250\n",
            BlockFormat::Alibaba,
        )
        .unwrap();
        assert_eq!((a.requests[1].time_ns, a.requests[0].write, a.requests[0].bytes), (250_000, true, 16_384));
        assert_eq!(a.devices, ["3"]);
    }

    #[test]
    fn a_malformed_line_names_the_file_the_line_and_the_field() {
        let cases = [
            ("1,2,3\n", BlockFormat::Tencent, "line 1", "expected 5 fields"),
            (
                "1538323200,2048,8,0,1283\n1538323200,x,8,0,1283\n",
                BlockFormat::Tencent,
                "line 2",
                "Offset: cannot read 'x'",
            ),
            ("1538323200,2048,8,2,1283\n", BlockFormat::Tencent, "line 1", "unknown request type '2'"),
            ("3,T,0,4096,15\n", BlockFormat::Alibaba, "line 1", "opcode: unknown request type 'T' (expected R or W)"),
            ("5,h,0,Trim,0,1,1\n", BlockFormat::Msr, "line 1", "Type: unknown request type 'Trim'"),
            ("10,h,0,Read,0,1,1\n\n5,h,0,Read,0,1,1\n", BlockFormat::Msr, "line 3", "earlier than the trace's first"),
        ];
        for (text, format, line, what) in cases {
            let e = parse_text(text, format).unwrap_err().to_string();
            assert!(e.contains("t.csv") && e.contains(line) && e.contains(what), "{e}");
        }
    }
}
