// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/testcluster/protobuf_body.h"

#include <algorithm>
#include <ctime>
#include <memory>
#include <string>
#include <utility>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/message.h>

#include "tools/kcache/testcluster/core.pb.h"
#include "tools/kcache/testcluster/runtime.pb.h"
#include "util/base64.h"

namespace kcache::serve {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;
using ojson = nlohmann::ordered_json;

constexpr std::string_view kMagic("k8s\0", 4);

struct Kind {
  std::string api_version, kind;
  const Message* prototype;
};

const std::vector<Kind>& Kinds() {
  static const std::vector<Kind> kinds = {
      {"v1", "ConfigMap", &k8s::io::api::core::v1::ConfigMap::default_instance()},
      {"v1", "Namespace", &k8s::io::api::core::v1::Namespace::default_instance()},
      {"v1", "Secret", &k8s::io::api::core::v1::Secret::default_instance()},
  };
  return kinds;
}

// Go's encoding/json with omitempty, which the built-in kinds' fields
// carry: gogo's marshaller writes every non-pointer field, empty or not.
bool Empty(const ojson& v) {
  return v.is_null() || (v.is_string() && v.get_ref<const std::string&>().empty()) ||
         (v.is_boolean() && !v.get<bool>()) || (v.is_number() && v == 0) ||
         ((v.is_object() || v.is_array()) && v.empty());
}

// metav1.Time: seconds precision in UTC, as it marshals to JSON; the zero
// time (an empty message) is null.
ojson TimeJson(const Message& m) {
  const Reflection* r = m.GetReflection();
  const FieldDescriptor* seconds = m.GetDescriptor()->FindFieldByNumber(1);
  if (!r->HasField(m, seconds)) return nullptr;
  std::time_t t = static_cast<std::time_t>(r->GetInt64(m, seconds));
  std::tm tm{};
  char buf[32];
  if (!gmtime_r(&t, &tm) || !std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm)) {
    return nullptr;
  }
  return buf;
}

ojson MessageJson(const Message& m);

ojson Scalar(const Message& m, const FieldDescriptor* f, int index) {
  const Reflection* r = m.GetReflection();
  const bool rep = f->is_repeated();
  switch (f->cpp_type()) {
    case FieldDescriptor::CPPTYPE_INT32:
      return rep ? r->GetRepeatedInt32(m, f, index) : r->GetInt32(m, f);
    case FieldDescriptor::CPPTYPE_INT64:
      return rep ? r->GetRepeatedInt64(m, f, index) : r->GetInt64(m, f);
    case FieldDescriptor::CPPTYPE_UINT32:
      return rep ? r->GetRepeatedUInt32(m, f, index) : r->GetUInt32(m, f);
    case FieldDescriptor::CPPTYPE_UINT64:
      return rep ? r->GetRepeatedUInt64(m, f, index) : r->GetUInt64(m, f);
    case FieldDescriptor::CPPTYPE_DOUBLE:
      return rep ? r->GetRepeatedDouble(m, f, index) : r->GetDouble(m, f);
    case FieldDescriptor::CPPTYPE_FLOAT:
      return rep ? r->GetRepeatedFloat(m, f, index) : r->GetFloat(m, f);
    case FieldDescriptor::CPPTYPE_BOOL:
      return rep ? r->GetRepeatedBool(m, f, index) : r->GetBool(m, f);
    case FieldDescriptor::CPPTYPE_ENUM:
      return rep ? r->GetRepeatedEnumValue(m, f, index) : r->GetEnumValue(m, f);
    case FieldDescriptor::CPPTYPE_STRING: {
      std::string s = rep ? r->GetRepeatedString(m, f, index) : r->GetString(m, f);
      return f->type() == FieldDescriptor::TYPE_BYTES ? Base64Encode(s) : s;
    }
    case FieldDescriptor::CPPTYPE_MESSAGE:
      return MessageJson(rep ? r->GetRepeatedMessage(m, f, index) : r->GetMessage(m, f));
  }
  return nullptr;
}

ojson MessageJson(const Message& m) {
  const std::string& type = m.GetDescriptor()->full_name();
  if (type == "k8s.io.apimachinery.pkg.apis.meta.v1.Time") return TimeJson(m);
  if (type == "k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1") {
    const Reflection* r = m.GetReflection();
    const FieldDescriptor* raw = m.GetDescriptor()->FindFieldByNumber(1);
    ojson doc = ojson::parse(r->GetString(m, raw), nullptr, false);
    return doc.is_discarded() ? ojson() : doc;
  }
  const Reflection* r = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  ojson out = ojson::object();
  for (const FieldDescriptor* f : fields) {
    ojson v;
    if (f->is_map()) {
      // Go writes a map's keys sorted.
      std::vector<std::pair<std::string, ojson>> entries;
      for (int i = 0; i < r->FieldSize(m, f); ++i) {
        const Message& e = r->GetRepeatedMessage(m, f, i);
        const Descriptor* d = e.GetDescriptor();
        entries.emplace_back(e.GetReflection()->GetString(e, d->FindFieldByNumber(1)),
                             Scalar(e, d->FindFieldByNumber(2), -1));
      }
      std::sort(entries.begin(), entries.end(),
                [](const auto& a, const auto& b) { return a.first < b.first; });
      v = ojson::object();
      for (auto& [key, value] : entries) v[key] = std::move(value);
    } else if (f->is_repeated()) {
      v = ojson::array();
      for (int i = 0; i < r->FieldSize(m, f); ++i) v.push_back(Scalar(m, f, i));
    } else {
      v = Scalar(m, f, -1);
    }
    if (!Empty(v)) out[f->name()] = std::move(v);
  }
  return out;
}

}  // namespace

const std::vector<std::string>& ProtobufKinds() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const Kind& k : Kinds()) out.push_back(k.api_version + " " + k.kind);
    return out;
  }();
  return names;
}

StatusOr<nlohmann::ordered_json> ProtobufToJson(std::string_view body) {
  if (body.substr(0, kMagic.size()) != kMagic) {
    return Status::InvalidArgument(
        "the protobuf body does not start with Kubernetes' 4-byte prefix \"k8s\\0\"");
  }
  body.remove_prefix(kMagic.size());
  k8s::io::apimachinery::pkg::runtime::Unknown envelope;
  if (!envelope.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return Status::InvalidArgument("the protobuf body is not a runtime.Unknown envelope");
  }
  if (!envelope.contentencoding().empty()) {
    return Status::InvalidArgument("the protobuf body's content encoding \"" +
                                   envelope.contentencoding() + "\" is not supported");
  }
  const std::string& api_version = envelope.typemeta().apiversion();
  const std::string& kind = envelope.typemeta().kind();
  for (const Kind& k : Kinds()) {
    if (k.api_version != api_version || k.kind != kind) continue;
    std::unique_ptr<Message> m(k.prototype->New());
    if (!m->ParseFromString(envelope.raw())) {
      return Status::InvalidArgument("the protobuf body's " + kind + " does not parse");
    }
    ojson out = {{"apiVersion", api_version}, {"kind", kind}};
    ojson fields = MessageJson(*m);
    for (auto& [key, value] : fields.items()) out[key] = std::move(value);
    return out;
  }
  std::string kinds;
  for (const std::string& k : ProtobufKinds()) kinds += (kinds.empty() ? "" : ", ") + k;
  return Status::Unimplemented("the synthetic cluster reads protobuf bodies of " + kinds +
                               " only, not of " + api_version + " " + kind +
                               ": send it as application/json");
}

}  // namespace kcache::serve
