//! Strong types for the quantities that flow through every hook.
//!
//! Addresses of different spaces (virtual, physical, cache line) and ids of
//! different things (cores, tasks, address spaces) are easy to mix up as bare
//! integers; a newtype makes the mix-up a compile error and costs nothing.

use serde::{Deserialize, Serialize};

macro_rules! newtype {
    ($(#[$doc:meta])* $name:ident($inner:ty)) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub $inner);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

newtype!(
    /// A virtual byte address in a task's address space.
    VirtAddr(u64)
);
newtype!(
    /// A physical byte address.
    PhysAddr(u64)
);
newtype!(
    /// A physical address divided by the line size (a cache line's identity).
    LineAddr(u64)
);
newtype!(
    /// A count of core clock cycles.
    Cycle(u64)
);
newtype!(
    /// Index of a core in the machine, numbered socket-major.
    CoreId(u32)
);
newtype!(
    /// Index of a schedulable task (process, thread or VCPU).
    TaskId(u32)
);
newtype!(
    /// Address-space id: tasks with the same asid share page tables and TLB entries.
    Asid(u32)
);

impl TaskId {
    /// Owner of a line that no task has touched (e.g. a page-table entry fill).
    pub const NONE: TaskId = TaskId(u32::MAX);
}

/// What a memory reference does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
#[repr(u8)]
pub enum AccessKind {
    /// A data read.
    #[default]
    Load = 0,
    /// A data write.
    Store = 1,
    /// An instruction fetch.
    Ifetch = 2,
}

impl AccessKind {
    /// Index into per-kind counter arrays.
    #[inline(always)]
    pub fn index(self) -> usize {
        self as usize
    }

    /// Lower-case name used in stats keys and trace dumps.
    pub fn name(self) -> &'static str {
        match self {
            AccessKind::Load => "load",
            AccessKind::Store => "store",
            AccessKind::Ifetch => "ifetch",
        }
    }

    /// Inverse of `as u8`; `None` for an unknown code.
    pub fn from_code(code: u8) -> Option<AccessKind> {
        match code {
            0 => Some(AccessKind::Load),
            1 => Some(AccessKind::Store),
            2 => Some(AccessKind::Ifetch),
            _ => None,
        }
    }
}

/// One memory reference of one task.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Access {
    /// Virtual address of the first byte referenced.
    pub addr: VirtAddr,
    /// Address of the instruction that made the reference (0 if unknown).
    pub pc: VirtAddr,
    /// Instructions retired since the previous access of this task, counting
    /// the instruction that makes this one (0 for the second and later
    /// references of one instruction).
    pub instrs: u32,
    /// Bytes referenced (at least 1).
    pub size: u16,
    /// Load, store or instruction fetch.
    pub kind: AccessKind,
}

impl Access {
    /// A load of `size` bytes at `addr` with no pc, one instruction.
    pub fn load(addr: u64, size: u16) -> Access {
        Access { addr: VirtAddr(addr), pc: VirtAddr(0), instrs: 1, size, kind: AccessKind::Load }
    }
}
