// placeholder until the wire module lands
#include "wharf/status.h"
