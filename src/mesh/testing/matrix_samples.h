// mesh/testing/matrix_samples.h: /api/v1/matrix documents of two daemons,
// "a" and "b" (as api_json.cc writes them), for the tests of
// cluster_matrix, matrix_text, collector and collector_http.
//   a: hosts a b c; a->b homa ok 52.3 us, a->c homa all_failed,
//      a->b tcp ok 1.3 ms with 0.5% loss.
//   b: hosts a b c d; b->a homa ok 61 us, b->c homa no_data,
//      b->a tcp ok 15 ms with 20% loss.
#pragma once

namespace wharf::mesh::testing {

inline constexpr const char* kMatrixA = R"({"self":"a","pinglist_version":"demo","window":"1m",
"hosts":["a","b","c"],"cells":[
{"from":"a","to":"b","transport":"homa","state":"ok","p50_us":52.3,"p99_us":180.0,
 "network_p50_us":40.1,"network_p99_us":150.2,"loss_ratio":0.0,"answered":600,"unanswered":0,
 "age_s":0.1,"app_p50_us":75.0,"app_p99_us":2400.0,"app_answered":9000,"app_unanswered":0},
{"from":"a","to":"c","transport":"homa","state":"all_failed","p50_us":null,"p99_us":null,
 "network_p50_us":null,"network_p99_us":null,"loss_ratio":null,"answered":0,"unanswered":0,
 "age_s":null},
{"from":"a","to":"b","transport":"tcp","state":"ok","p50_us":1300.0,"p99_us":4000.0,
 "network_p50_us":1200.0,"network_p99_us":3900.0,"loss_ratio":0.005,"answered":597,
 "unanswered":3,"age_s":0.2}]})";

inline constexpr const char* kMatrixB = R"({"self":"b","pinglist_version":"demo","window":"1m",
"hosts":["a","b","c","d"],"cells":[
{"from":"b","to":"a","transport":"homa","state":"ok","p50_us":61.0,"p99_us":250.0,
 "network_p50_us":45.0,"network_p99_us":200.0,"loss_ratio":0.0,"answered":600,"unanswered":0,
 "age_s":0.2},
{"from":"b","to":"c","transport":"homa","state":"no_data","p50_us":null,"p99_us":null,
 "network_p50_us":null,"network_p99_us":null,"loss_ratio":null,"answered":0,"unanswered":0,
 "age_s":null},
{"from":"b","to":"a","transport":"tcp","state":"ok","p50_us":15000.0,"p99_us":40000.0,
 "network_p50_us":14000.0,"network_p99_us":39000.0,"loss_ratio":0.2,"answered":480,
 "unanswered":120,"age_s":0.3}]})";

}  // namespace wharf::mesh::testing
