//! The probe is `make bench`'s size floor, so a release build of it is linked as
//! tandem's is: without the unwind tables (`build/unwind_tables.rs` says why).

#[path = "../../build/unwind_tables.rs"]
mod unwind_tables;

fn main() {
    unwind_tables::drop_unwind_tables();
}
