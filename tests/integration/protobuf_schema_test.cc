// SPDX-License-Identifier: Apache-2.0

// kcache serve reads kubectl's protobuf bodies with messages of its own
// (tools/kcache/testcluster/proto/). This test holds them to Kubernetes'
// own definitions, from the source the integration suite's kube-apiserver
// is built from: every message declared there exists in Kubernetes, and
// every field has Kubernetes' number, name, type and label.

#include <gtest/gtest.h>

#include <google/protobuf/descriptor.h>
#include <google/protobuf/descriptor.pb.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "testing/command.h"
#include "testing/temp_dir.h"

namespace {

namespace pb = google::protobuf;
using kcache::testing::RunCommand;

// The pool of the descriptor set protoc writes for `files` under `root`.
std::unique_ptr<pb::DescriptorPool> Compile(const std::string& root, const std::string& files,
                                            const std::string& out) {
  kcache::testing::CommandResult r =
      RunCommand("protoc --include_imports --descriptor_set_out=" + out + " --proto_path=" + root +
                 " " + files + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::ifstream in(out, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  pb::FileDescriptorSet set;
  EXPECT_TRUE(set.ParseFromString(bytes.str())) << out;
  auto pool = std::make_unique<pb::DescriptorPool>();
  for (const pb::FileDescriptorProto& f : set.file()) {
    EXPECT_NE(pool->BuildFile(f), nullptr) << f.name();
  }
  return pool;
}

void CompareMessage(const pb::Descriptor& ours, const pb::DescriptorPool& theirs, int* fields) {
  const pb::Descriptor* kube = theirs.FindMessageTypeByName(ours.full_name());
  ASSERT_NE(kube, nullptr) << ours.full_name() << " is not a message of Kubernetes";
  for (int i = 0; i < ours.field_count(); ++i) {
    const pb::FieldDescriptor* f = ours.field(i);
    const pb::FieldDescriptor* k = kube->FindFieldByNumber(f->number());
    ASSERT_NE(k, nullptr) << f->full_name() << " = " << f->number() << " is not in Kubernetes'";
    EXPECT_EQ(f->name(), k->name()) << f->full_name() << " = " << f->number();
    EXPECT_EQ(f->type(), k->type()) << f->full_name();
    EXPECT_EQ(f->label(), k->label()) << f->full_name();
    if (f->message_type()) {
      EXPECT_EQ(f->message_type()->full_name(), k->message_type()->full_name()) << f->full_name();
    }
    ++*fields;
  }
  for (int i = 0; i < ours.nested_type_count(); ++i) {  // map entries
    CompareMessage(*ours.nested_type(i), theirs, fields);
  }
}

TEST(ProtobufSchemaTest, OurMessagesAreKubernetesMessages) {
  const char* source = std::getenv("KCACHE_SOURCE_DIR");
  ASSERT_NE(source, nullptr) << "KCACHE_SOURCE_DIR names the repository";
  kcache::testing::CommandResult built =
      RunCommand(std::string(source) + "/tests/cluster/build-apiserver 2>&1");
  ASSERT_EQ(built.exit_code, 0) << built.output;
  const std::string bin = built.output.substr(0, built.output.find_last_not_of('\n') + 1);
  const std::filesystem::path dir =
      std::filesystem::path(bin.substr(bin.rfind('\n') + 1)).parent_path() / "src";
  std::string staging;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    if (e.path().filename().string().rfind("kubernetes-", 0) == 0) {
      staging = (e.path() / "staging" / "src").string();
    }
  }
  ASSERT_FALSE(staging.empty()) << "no Kubernetes source tree in " << dir
                                << " (build-apiserver keeps it beside the binary)";

  kcache::testing::TempDir tmp;
  auto ours = Compile(std::string(source) + "/tools/kcache/testcluster/proto",
                      "meta.proto runtime.proto core.proto", tmp.Sub("ours.pb"));
  auto theirs = Compile(staging,
                        "k8s.io/api/core/v1/generated.proto "
                        "k8s.io/apimachinery/pkg/runtime/generated.proto",
                        tmp.Sub("theirs.pb"));
  int messages = 0, fields = 0;
  for (const char* file : {"meta.proto", "runtime.proto", "core.proto"}) {
    const pb::FileDescriptor* f = ours->FindFileByName(file);
    ASSERT_NE(f, nullptr) << file;
    for (int i = 0; i < f->message_type_count(); ++i) {
      CompareMessage(*f->message_type(i), *theirs, &fields);
      ++messages;
    }
  }
  EXPECT_EQ(messages, 13);
  EXPECT_GT(fields, 50);
}

}  // namespace
