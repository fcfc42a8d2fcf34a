// The system zlib (Debian/Ubuntu: zlib1g-dev to build, zlib1g at run time), used by HearthStorage
// for snapshot compression and CRC-32.
#include <zlib.h>
