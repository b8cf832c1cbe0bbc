// Hostile: would replace the kit's adapter and report success without calling haxpy.
extern "C" void bw_student_call(int, float, void* const*) {}
