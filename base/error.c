/* Error codes and the per-thread last-error message. */
#define _POSIX_C_SOURCE 200809L
#define ORTHROS_ERROR_IMPL /* the functions themselves, not the analyzer's model of them (orthros_base.h) */
#include "orthros_base.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static _Thread_local char last_error[1024];

const char *orthros_strerror(int code)
{
    switch (code) {
    case ORTHROS_OK: return "success";
    case ORTHROS_EINVAL: return "invalid argument";
    case ORTHROS_EIO: return "input/output error";
    case ORTHROS_EFORMAT: return "malformed file";
    case ORTHROS_ENOMEM: return "out of memory";
    case ORTHROS_EUNSUPPORTED: return "not supported";
    case ORTHROS_EDEVICE: return "device error";
    case ORTHROS_ERANGE: return "value out of range";
    default: return "unknown error";
    }
}

int orthros_error(int code, const char *fmt, ...)
{
    /* Formatted apart first: an argument may be orthros_last_error() itself (a message wrapped in context). */
    char tmp[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    memcpy(last_error, tmp, sizeof last_error);
    /* Names and values quoted from files may hold control characters; the message stays one line. */
    for (char *p = last_error; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = '?';
    return code;
}

int orthros_error_prefix(int code, const char *prefix)
{
    /* Truncation is fine: the message stays one line, cut at the buffer's end. */
    char tmp[sizeof last_error];
    size_t np = strnlen(prefix, sizeof tmp - 3);
    memcpy(tmp, prefix, np);
    memcpy(tmp + np, ": ", 2);
    size_t room = sizeof tmp - np - 3;
    size_t nm = strnlen(last_error, room);
    memcpy(tmp + np + 2, last_error, nm);
    tmp[np + 2 + nm] = '\0';
    for (size_t i = 0; i < np; i++)
        if ((unsigned char)tmp[i] < 0x20 || tmp[i] == 0x7f) tmp[i] = '?';
    memcpy(last_error, tmp, sizeof last_error);
    return code;
}

const char *orthros_last_error(void)
{
    return last_error[0] ? last_error : "no error recorded";
}
