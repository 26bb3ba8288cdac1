//! The probe library.
