/* <mach/vm_page_size.h> for Linux: the page size of the process (sysconf), as Mach's vm_page_size. */
#pragma once

#include <stddef.h>
#include <unistd.h>

typedef size_t vm_size_t;
#define vm_page_size ((vm_size_t)sysconf(_SC_PAGESIZE))
