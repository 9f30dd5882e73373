//! Running a built job.
