//! The probe is `make bench`'s size floor, so a release build of it is linked as
//! tandem's is: without the unwind tables (`tandem_common::unwind_tables` says why).

fn main() {
    tandem_common::unwind_tables::drop_unwind_tables();
}
