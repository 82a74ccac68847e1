//! The trace readers against independent writers: random programs rendered
//! in each format by a few lines of code here, read back, checked against
//! the accesses the format's documentation says they mean, and carried
//! through a `.cst` file unchanged; and arbitrary or damaged bytes, which
//! must give an error with a position, never a panic.

use std::io::Cursor;

use cachesched_core::error::Error;
use cachesched_core::trace::champsim::ChampsimReader;
use cachesched_core::trace::din::DinReader;
use cachesched_core::trace::lackey::{LackeyOptions, LackeyReader};
use cachesched_core::trace::native::{NativeReader, NativeWriter, TraceHeader, WriterOptions};
use cachesched_core::trace::{collect, Workload};
use cachesched_core::{Access, AccessKind, VirtAddr};
use proptest::prelude::*;

fn acc(kind: AccessKind, addr: u64, size: u16, pc: u64, instrs: u32) -> Access {
    Access { addr: VirtAddr(addr), pc: VirtAddr(pc), instrs, size, kind }
}

/// `accesses` written to a `.cst` file in memory and read back.
fn through_cst(accesses: &[Access]) -> Vec<Access> {
    let mut bytes = Vec::new();
    let options = WriterOptions { block_records: 97, level: 1 };
    let mut w = NativeWriter::new(&mut bytes, "mem.cst", &TraceHeader::new("test"), options).unwrap();
    w.write_all_thread(0, accesses).unwrap();
    w.finish().unwrap();
    collect(&mut NativeReader::new(Cursor::new(bytes), "mem.cst", None).unwrap()).unwrap()
}

fn has_position(e: &Error, text: bool) -> bool {
    matches!(e, Error::Trace { pos, .. } if pos.offset.is_some() && (pos.line.is_some() || !text))
}

/// One instruction of a generated program: its address and size, and its
/// data operations (0 load, 1 store, 2 modify) with address and size.
type Instr = (u64, u16, Vec<(u8, u64, u16)>);

fn arb_program() -> impl Strategy<Value = Vec<Instr>> {
    let op = (0u8..3, prop_oneof![0u64..1 << 12, any::<u64>()], 1u16..=64);
    let instr = (0x400000u64..0x400400, 1u16..16, proptest::collection::vec(op, 0..3));
    proptest::collection::vec(instr, 0..60)
}

/// The program as lackey prints it, valgrind's banner and summary included.
fn render_lackey(program: &[Instr]) -> String {
    let mut text = String::from("==42== Lackey, an example Valgrind tool\n==42== \n");
    for (pc, size, ops) in program {
        text += &format!("I  {pc:08x},{size}\n");
        for &(op, addr, size) in ops {
            text += &format!(" {} {addr:08x},{size}\n", ["L", "S", "M"][op as usize]);
        }
    }
    text + "==42== \n==42== Exit code:       0\n"
}

/// What lackey's documentation says the program's accesses are.
fn expected_lackey(program: &[Instr], ifetch: bool) -> Vec<Access> {
    let mut out = Vec::new();
    let mut since = 0;
    for (pc, size, ops) in program {
        since += 1;
        if ifetch {
            out.push(acc(AccessKind::Ifetch, *pc, *size, *pc, 1));
        }
        for &(op, addr, size) in ops {
            let instrs = if ifetch { 0 } else { std::mem::take(&mut since) };
            let kind = if op == 1 { AccessKind::Store } else { AccessKind::Load };
            out.push(acc(kind, addr, size, *pc, instrs));
            if op == 2 {
                out.push(acc(AccessKind::Store, addr, size, *pc, 0));
            }
        }
    }
    out
}

/// One ChampSim record: ip, destination and source memory operands.
type Record = (u64, [u64; 2], [u64; 4]);

fn arb_records() -> impl Strategy<Value = Vec<Record>> {
    let operand = prop_oneof![Just(0u64), 1u64..1 << 20, any::<u64>()];
    let record = (
        1u64..u64::MAX,
        [operand.clone(), operand.clone()],
        [operand.clone(), operand.clone(), operand.clone(), operand],
    );
    proptest::collection::vec(record, 0..60)
}

fn render_champsim(records: &[Record]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for (ip, dst, src) in records {
        bytes.extend_from_slice(&ip.to_le_bytes());
        bytes.extend_from_slice(&[0, 0, 1, 2, 3, 4, 5, 6]);
        dst.iter().chain(src).for_each(|m| bytes.extend_from_slice(&m.to_le_bytes()));
    }
    bytes
}

fn expected_champsim(records: &[Record], size: u16) -> Vec<Access> {
    let mut out = Vec::new();
    let mut since = 0;
    for (ip, dst, src) in records {
        since += 1;
        let loads = src.iter().filter(|&&a| a != 0).map(|&a| (AccessKind::Load, a));
        let stores = dst.iter().filter(|&&a| a != 0).map(|&a| (AccessKind::Store, a));
        for (kind, addr) in loads.chain(stores) {
            out.push(acc(kind, addr, size, *ip, std::mem::take(&mut since)));
        }
    }
    out
}

/// A din record: label 0..=5, address, size (extended din only).
type DinRecord = (u8, u64, u16);

fn arb_din() -> impl Strategy<Value = (bool, Vec<DinRecord>, u64)> {
    let record = (0u8..6, prop_oneof![0u64..1 << 16, any::<u64>()], 1u16..=0xffff);
    (any::<bool>(), proptest::collection::vec(record, 0..60), any::<u64>())
}

/// Records as din text, with the freedoms the format allows (prefixes,
/// case, blanks, comments) chosen by the bits of `style`.
fn render_din(extended: bool, records: &[DinRecord], style: u64) -> String {
    let mut text = String::new();
    for (i, &(label, addr, size)) in records.iter().enumerate() {
        let bits = style.rotate_left(i as u32 * 5);
        let hex = |v: u64| match bits & 3 {
            0 => format!("{v:x}"),
            1 => format!("0x{v:x}"),
            2 => format!("{v:X}"),
            _ => format!("0X{v:X}"),
        };
        let gap = if bits & 4 == 0 { " " } else { " \t " };
        let comment = if bits & 8 == 0 { "" } else { "  comment 1 2" };
        if extended {
            let letter = b"rwimcv"[label as usize] as char;
            let letter = if bits & 16 == 0 { letter } else { letter.to_ascii_uppercase() };
            text += &format!("{letter}{gap}{}{gap}{}{comment}\n", hex(addr), hex(size as u64));
        } else {
            text += &format!("{label}{gap}{}{comment}\n", hex(addr));
        }
    }
    text
}

/// What Dinero IV makes of the records.
fn expected_din(extended: bool, records: &[DinRecord]) -> Vec<Access> {
    let mut out = Vec::new();
    let (mut pc, mut fetches) = (0, false);
    for &(label, addr, size) in records {
        let (addr, size) = if extended { (addr, size) } else { (addr & !3, 4) };
        let kind = match label {
            0 | 3 => AccessKind::Load,
            1 => AccessKind::Store,
            2 => AccessKind::Ifetch,
            _ => continue,
        };
        if kind == AccessKind::Ifetch {
            (pc, fetches) = (addr, true);
        }
        let instrs = u32::from(kind == AccessKind::Ifetch || !fetches);
        out.push(acc(kind, addr, size, pc, instrs));
    }
    out
}

/// Read `bytes` with every reader; errors must carry a position.
fn read_all_ways(bytes: &[u8]) -> Result<(), TestCaseError> {
    let mut readers: Vec<(Box<dyn Workload>, bool)> = vec![
        (Box::new(LackeyReader::new(bytes, "f", LackeyOptions::default())), true),
        (Box::new(LackeyReader::new(bytes, "f", LackeyOptions { ifetch: true })), true),
        (Box::new(DinReader::new(bytes, "f")), true),
        (Box::new(ChampsimReader::new(bytes, "f", 64)), false),
    ];
    for (reader, text) in readers.iter_mut() {
        let mut buf = [Access::default(); 7];
        // Bounded: no input makes a reader return more accesses than bytes.
        let mut total = 0;
        loop {
            match reader.fill(&mut buf) {
                Ok(0) => break,
                Ok(n) => total += n,
                Err(e) => {
                    prop_assert!(has_position(&e, *text), "{}", e);
                    break;
                }
            }
            prop_assert!(total <= bytes.len());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn lackey_round_trips(program in arb_program(), ifetch in any::<bool>()) {
        let text = render_lackey(&program);
        let got = collect(&mut LackeyReader::new(text.as_bytes(), "p", LackeyOptions { ifetch })).unwrap();
        let expected = expected_lackey(&program, ifetch);
        prop_assert_eq!(&got, &expected);
        prop_assert_eq!(through_cst(&got), expected);
    }

    #[test]
    fn champsim_round_trips(records in arb_records(), size in 1u16..=64) {
        let bytes = render_champsim(&records);
        let got = collect(&mut ChampsimReader::new(&bytes[..], "p", size)).unwrap();
        let expected = expected_champsim(&records, size);
        prop_assert_eq!(&got, &expected);
        prop_assert_eq!(through_cst(&got), expected);
    }

    #[test]
    fn din_round_trips((extended, records, style) in arb_din()) {
        let text = render_din(extended, &records, style);
        let got = collect(&mut DinReader::new(text.as_bytes(), "p")).unwrap();
        let expected = expected_din(extended, &records);
        prop_assert_eq!(&got, &expected);
        prop_assert_eq!(through_cst(&got), expected);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        read_all_ways(&bytes)?;
    }

    #[test]
    fn damaged_traces_never_panic(program in arb_program(), (extended, din, style) in arb_din(),
                                  records in arb_records(),
                                  edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
                                  cut in any::<prop::sample::Index>()) {
        let inputs = [
            render_lackey(&program).into_bytes(),
            render_din(extended, &din, style).into_bytes(),
            render_champsim(&records),
        ];
        for mut bytes in inputs {
            if bytes.is_empty() {
                continue;
            }
            for (at, v) in &edits {
                let i = at.index(bytes.len());
                bytes[i] = *v;
            }
            read_all_ways(&bytes)?;
            bytes.truncate(cut.index(bytes.len()));
            read_all_ways(&bytes)?;
        }
    }
}

#[test]
fn a_cut_champsim_record_is_reported_at_its_offset_after_the_whole_ones() {
    let records = [(0x400000, [0, 0], [0x1000, 0, 0, 0]), (0x400004, [0x2000, 0], [0; 4])];
    let mut bytes = render_champsim(&records);
    bytes.extend_from_slice(&[1, 2, 3]);
    let mut r = ChampsimReader::new(&bytes[..], "cut.champsim", 64);
    let mut got = Vec::new();
    let mut buf = [Access::default(); 16];
    let err = loop {
        match r.fill(&mut buf) {
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) => break e,
        }
    };
    assert_eq!(got, expected_champsim(&records, 64));
    assert!(err.to_string().starts_with("cut.champsim: byte offset 128: truncated"), "{err}");
}

#[test]
fn a_corrupt_lackey_line_is_reported_after_the_lines_before_it() {
    let text = "I  0400,3\n L 1000,8\nI  0403,2\n S 10x8,8\n";
    let mut r = LackeyReader::new(text.as_bytes(), "bad.lackey", LackeyOptions::default());
    let mut buf = [Access::default(); 16];
    assert_eq!(r.fill(&mut buf).unwrap(), 1);
    let err = r.fill(&mut buf).unwrap_err().to_string();
    assert_eq!(err, "bad.lackey: line 4: byte offset 35: expected ',' after the address, found 'x'");
    assert_eq!(r.fill(&mut buf).unwrap(), 0);
}
