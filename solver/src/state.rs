//! The builders' state arrays: one atomic word per position (or per group of positions), in
//! an anonymous memory map advised to use huge pages (the builders read and write it at
//! random; huge pages spare most TLB misses). Also [`for_bits64`], the iteration over a word's
//! set bits that the two-bit builder and the depth pass share.

use std::marker::PhantomData;
use std::sync::atomic::{AtomicI8, AtomicU16, AtomicU64, AtomicU8, Ordering::Relaxed};

/// The atomic integers a state array may hold: a fresh (zeroed) map is a valid array of them,
/// and each has the size and alignment of its integer.
pub(crate) trait AtomicWord: Send + Sync + 'static {
    /// A relaxed load, widened (for the prefetch fallback).
    #[cfg_attr(target_arch = "x86_64", allow(dead_code))]
    fn load_relaxed(&self) -> u64;
}

impl AtomicWord for AtomicU8 {
    #[inline]
    fn load_relaxed(&self) -> u64 {
        u64::from(self.load(Relaxed))
    }
}

impl AtomicWord for AtomicI8 {
    #[inline]
    fn load_relaxed(&self) -> u64 {
        self.load(Relaxed) as u8 as u64
    }
}

impl AtomicWord for AtomicU16 {
    #[inline]
    fn load_relaxed(&self) -> u64 {
        u64::from(self.load(Relaxed))
    }
}

impl AtomicWord for AtomicU64 {
    #[inline]
    fn load_relaxed(&self) -> u64 {
        self.load(Relaxed)
    }
}

/// `len` atomic words of type `W` (16-bit by default), zero to start with.
pub(crate) struct StateArray<W: AtomicWord = AtomicU16> {
    map: memmap2::MmapMut,
    len: usize,
    word: PhantomData<W>,
}

impl<W: AtomicWord> StateArray<W> {
    pub(crate) fn new(len: usize) -> std::io::Result<StateArray<W>> {
        let bytes = (len * std::mem::size_of::<W>()).max(std::mem::size_of::<W>());
        let map = memmap2::MmapMut::map_anon(bytes)?;
        #[cfg(target_os = "linux")]
        {
            // Only advice: without transparent huge pages the map works the same.
            let _ = map.advise(memmap2::Advice::HugePage);
        }
        Ok(StateArray {
            map,
            len,
            word: PhantomData,
        })
    }

    /// Number of words.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub(crate) fn words(&self) -> &[W] {
        let ptr = self.map.as_ptr();
        debug_assert_eq!(ptr.align_offset(std::mem::align_of::<W>()), 0);
        // SAFETY: the map is anonymous, private to this struct and at least len × size_of::<W>
        // bytes long; it is page-aligned, so aligned for W; a fresh anonymous map is zeroed,
        // a valid bit pattern of every `AtomicWord`, which has the size and alignment of its
        // integer. While this shared slice lives every access goes through the atomics (the
        // only plain view, `plain_mut`, needs `&mut self`), so shared references from several
        // threads are sound. The slice lives no longer than `self`, which owns the map.
        unsafe { std::slice::from_raw_parts(ptr.cast::<W>(), self.len) }
    }

    /// Start loading the cache line of word `q` without waiting for it: a prefetch
    /// instruction, which retires at once, where the processor has one; else a read.
    #[inline]
    pub(crate) fn prefetch(&self, q: usize) {
        let word = &self.words()[q];
        #[cfg(target_arch = "x86_64")]
        prefetch_line(word);
        #[cfg(not(target_arch = "x86_64"))]
        std::hint::black_box(word.load_relaxed());
    }
}

impl StateArray<AtomicU16> {
    /// The words as plain integers, for phases in which no other thread touches them (the
    /// exclusive borrow proves it), so that the compiler may vectorise loops over them.
    pub(crate) fn plain_mut(&mut self) -> &mut [u16] {
        let ptr = self.map.as_mut_ptr();
        // SAFETY: as in `words`, the map is anonymous, private to this struct, page-aligned
        // and at least 2 × len bytes long, and every bit pattern is a valid u16; `&mut self`
        // excludes every other borrow of the map (atomic views included) for the slice's life.
        unsafe { std::slice::from_raw_parts_mut(ptr.cast::<u16>(), self.len) }
    }
}

/// Start loading the cache line holding `x` without waiting for it (a prefetch instruction,
/// which retires at once; nothing where the processor has none).
#[inline]
pub(crate) fn prefetch_line<T>(x: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint: it never faults, and it reads or writes nothing the
    // program can observe. The address is that of a live reference.
    unsafe {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        _mm_prefetch::<_MM_HINT_T0>(std::ptr::from_ref(x).cast::<i8>());
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = x;
}

/// Call `f` with the index of every set bit of `bits`.
#[inline]
pub(crate) fn for_bits64(mut bits: u64, mut f: impl FnMut(usize)) {
    while bits != 0 {
        f(bits.trailing_zeros() as usize);
        bits &= bits - 1;
    }
}
