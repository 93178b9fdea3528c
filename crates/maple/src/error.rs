//! Error values returned by the tree. Every bad input maps to one of these;
//! no public operation panics on user input, and a failed call leaves the
//! tree exactly as it was.

use std::fmt;

/// Why a tree operation was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MapleError {
    /// A range with `first > last`.
    InvertedRange {
        /// First index given.
        first: u64,
        /// Last index given.
        last: u64,
    },
    /// A gap search or allocation for zero indices.
    ZeroSize,
    /// A search window with `min > max`.
    InvertedBounds {
        /// Lower bound given.
        min: u64,
        /// Upper bound given.
        max: u64,
    },
    /// No free range of the requested size lies inside the window.
    NoSpace {
        /// Lower bound of the window.
        min: u64,
        /// Upper bound of the window.
        max: u64,
        /// Indices asked for.
        size: u64,
    },
    /// `insert*` found an index of the range already occupied.
    Occupied {
        /// First index of the refused range.
        first: u64,
        /// Last index of the refused range.
        last: u64,
    },
    /// A range argument that holds no index (`5..5`, `..0`).
    EmptyRange,
    /// An alignment that is not a power of two.
    BadAlignment {
        /// The alignment given.
        align: u64,
    },
}

impl fmt::Display for MapleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            MapleError::InvertedRange { first, last } => {
                write!(f, "inverted range: first {first:#x} > last {last:#x}")
            }
            MapleError::ZeroSize => f.write_str("size must be at least 1"),
            MapleError::InvertedBounds { min, max } => {
                write!(f, "inverted search window: min {min:#x} > max {max:#x}")
            }
            MapleError::NoSpace { min, max, size } => write!(
                f,
                "no free range of {size:#x} indices in [{min:#x}, {max:#x}]"
            ),
            MapleError::Occupied { first, last } => {
                write!(f, "range [{first:#x}, {last:#x}] is already occupied")
            }
            MapleError::EmptyRange => f.write_str("the range holds no index"),
            MapleError::BadAlignment { align } => {
                write!(f, "alignment {align:#x} is not a power of two")
            }
        }
    }
}

impl std::error::Error for MapleError {}

/// A refused write, handing the value back to the caller so nothing is lost.
///
/// ```
/// use aspace_maple::{MapleError, MapleTree};
///
/// let tree = MapleTree::new();
/// tree.try_insert(0..10, String::from("kept")).unwrap();
/// let err = tree.try_insert(5..6, String::from("mine")).unwrap_err();
/// assert_eq!(err.kind, MapleError::Occupied { first: 5, last: 5 });
/// assert_eq!(err.into_value(), "mine"); // nothing lost
/// assert_eq!(tree.empty_area(0, 9, 1), Err(MapleError::NoSpace { min: 0, max: 9, size: 1 }));
/// ```
pub struct WriteError<T> {
    /// Why the write was refused.
    pub kind: MapleError,
    /// The value that was not stored.
    pub value: T,
}

impl<T> WriteError<T> {
    /// Gives back the value that was not stored.
    pub fn into_value(self) -> T {
        self.value
    }
}

impl<T> fmt::Debug for WriteError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteError")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl<T> fmt::Display for WriteError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.kind, f)
    }
}

impl<T> std::error::Error for WriteError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.kind)
    }
}

impl<T> From<WriteError<T>> for MapleError {
    fn from(e: WriteError<T>) -> Self {
        e.kind
    }
}

/// Checks `first <= last`.
pub(crate) fn check_range(first: u64, last: u64) -> Result<(), MapleError> {
    if first > last {
        Err(MapleError::InvertedRange { first, last })
    } else {
        Ok(())
    }
}

/// Checks a gap-search request and returns the last start that could fit,
/// or the error describing why none can.
pub(crate) fn check_window(min: u64, max: u64, size: u64) -> Result<u64, MapleError> {
    if size == 0 {
        return Err(MapleError::ZeroSize);
    }
    if min > max {
        return Err(MapleError::InvertedBounds { min, max });
    }
    // The window holds max - min + 1 indices, which overflows only for the
    // full u64 space, where any size fits.
    let span_minus_one = max - min;
    if size - 1 > span_minus_one {
        return Err(MapleError::NoSpace { min, max, size });
    }
    Ok(max - (size - 1))
}
