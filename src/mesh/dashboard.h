// mesh/dashboard.h: wharfd's mesh dashboard, the single page mesh_http.cc
// serves at "/". The page lives in dashboard.html (HTML, CSS and plain JS,
// no external asset); at build time CMake copies its bytes into a generated
// .cc in the build tree (src/mesh/CMakeLists.txt, embed_dashboard.cmake),
// so the binary needs no file at run time. What the page shows, the URL
// query it honours and its CSS class names are documented at the top of
// dashboard.html. The JSON it reads is api_json.h's; the routes are
// mesh_http.cc's.
#pragma once

#include <string_view>

namespace wharf::mesh {

// The page, byte for byte as dashboard.html (UTF-8). Static storage; never
// empty.
std::string_view DashboardHtml();

}  // namespace wharf::mesh
