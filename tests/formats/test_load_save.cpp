// Loading and saving .npy and safetensors (issue 13, item 4 "Formats people
// have"; item 6 "Integrity and faults"; item 7 progress; docs/storage.md,
// "File formats"):
//   - loading into CPU reads; into FileBacked maps the user's file without a
//     copy (the carrier's path is the file, owns_file false, read-only);
//   - Fortran order is a transposed-stride Layout, no copy;
//   - saving is atomic: fault injection through the replaceable FormatIo
//     (EIO, ENOSPC, short writes, failures at fsync, close and rename) leaves
//     the old file intact and no temporary file behind, with an OSError
//     naming the file and the offset;
//   - saves over the threshold report progress.
#include <strideweave/carriers/cpu.h>
#include <strideweave/carriers/file_backed.h>
#include <strideweave/errors.h>
#include <strideweave/formats.h>
#include <strideweave/tensor.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "sysio/system_io.h"

#include <fcntl.h>

namespace sw = strideweave;
namespace fs = std::filesystem;
using sw::DType;
using sw::Tensor;
using sw::Value;

namespace {

class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "sw-formats-XXXXXX").string();
    const char* made = ::mkdtemp(t.data());
    if (made == nullptr) throw std::runtime_error(fmt::format("mkdtemp failed for {}", t));
    path_ = made;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(path_)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  fs::path path_;
};

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_all(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

Tensor f32(std::vector<float> values, sw::Shape shape) {
  std::vector<Value> v;
  for (float x : values) v.push_back(Value::from_float32(x));
  return Tensor(sw::CPU::from_values(v, DType::Float32()), 0, sw::Layout::row_major(shape));
}

std::vector<float> floats(const Tensor& t) {
  // Logical order is first axis fastest; compare in C order via the reversed view.
  std::vector<std::int64_t> rev(t.rank());
  for (std::size_t i = 0; i < t.rank(); ++i) rev[i] = static_cast<std::int64_t>(t.rank() - 1 - i);
  std::vector<float> out;
  for (const Value& v : t.permute(rev).values()) out.push_back(v.f);
  return out;
}

std::string npy_file(const std::string& dict, const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header.push_back(' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY\x01";
  out.push_back('\0');
  out.push_back(static_cast<char>(header.size() & 0xff));
  out.push_back(static_cast<char>(header.size() >> 8));
  return out + header + data;
}

std::string float_bytes(std::vector<float> v) {
  std::string out(v.size() * 4, '\0');
  std::memcpy(out.data(), v.data(), out.size());
  return out;
}

std::string safetensors_file(const std::string& json, const std::string& data) {
  std::string out;
  for (std::size_t i = 0; i < 8; ++i) out.push_back(static_cast<char>((json.size() >> (8 * i)) & 0xff));
  return out + json + data;
}

// Fails the nth call (0-based) of one named method with `error`; `short_io`
// makes every read and write move at most 3 bytes.
using FormatIo = sw::sysio::SystemIo;

class FaultyIo : public FormatIo {
 public:
  FaultyIo(std::string call, int error, int nth = 0, bool short_io = false)
      : call_(std::move(call)), error_(error), nth_(nth), short_(short_io) {}
  // The formats' three opens: a file to load, the saver's temporary file
  // (O_CREAT) and its directory (O_DIRECTORY, to fsync it).
  int open(const std::string& p, int flags, unsigned mode, int& fd) noexcept override {
    const char* name = (flags & O_CREAT) ? "create_exclusive" : (flags & O_DIRECTORY) ? "open_directory" : "open_read";
    return fail(name) ? error_ : FormatIo::open(p, flags, mode, fd);
  }
  int status(int fd, sw::sysio::FileStatus& s) noexcept override {
    return fail("file_size") ? error_ : FormatIo::status(fd, s);
  }
  int read_at(int fd, void* buf, std::size_t n, std::int64_t o, std::size_t& got) noexcept override {
    if (fail("read_at")) return error_;
    if (call_ == "read_at_eof") {
      got = 0;
      return 0;
    }
    return FormatIo::read_at(fd, buf, short_ ? std::min<std::size_t>(n, 3) : n, o, got);
  }
  int write(int fd, const void* buf, std::size_t n, std::size_t& w) noexcept override {
    if (fail("write")) return error_;
    return FormatIo::write(fd, buf, short_ ? std::min<std::size_t>(n, 3) : n, w);
  }
  int sync(int fd) noexcept override { return fail("sync") ? error_ : FormatIo::sync(fd); }
  int close(int fd) noexcept override {
    const int real = FormatIo::close(fd);  // a failed close(2) has still closed it
    return fail("close") ? error_ : real;
  }
  int rename(const std::string& a, const std::string& b) noexcept override {
    return fail("rename") ? error_ : FormatIo::rename(a, b);
  }
  int remove_file(const std::string& p) noexcept override {
    return fail("remove_file") ? error_ : FormatIo::remove_file(p);
  }
  int calls(const std::string& name) const { return name == call_ ? seen_ : -1; }

 private:
  bool fail(const char* name) {
    if (call_ != name) return false;
    return seen_++ == nth_;
  }
  std::string call_;
  int error_;
  int nth_;
  bool short_;
  int seen_ = 0;
};

}  // namespace

// ---- loading

TEST(Formats_Load, NpyIntoCpuReadsAndKeepsCOrder) {
  TempDir dir;
  write_all(dir / "a.npy", npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                    float_bytes({1, 2, 3, 4, 5, 6})));
  const Tensor t = sw::load_npy(dir / "a.npy");
  EXPECT_EQ(t.carrier_type(), sw::carrier_class<sw::CPU>());
  EXPECT_EQ(t.shape(), sw::Shape::of({2, 3}));
  EXPECT_EQ(t.at({0, 2}).f, 3.0f);
  EXPECT_EQ(t.at({1, 0}).f, 4.0f);
}

TEST(Formats_Load, FortranOrderIsTransposedStrideLayoutWithoutCopy) {
  TempDir dir;
  // Column-major [[1, 2, 3], [4, 5, 6]]: the file holds 1, 4, 2, 5, 3, 6.
  write_all(dir / "f.npy", npy_file("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                                    float_bytes({1, 4, 2, 5, 3, 6})));
  for (const auto target : {sw::LoadTarget::CPU, sw::LoadTarget::FileBacked}) {
    sw::LoadOptions o;
    o.carrier = target;
    const Tensor t = sw::load_npy(dir / "f.npy", o);
    EXPECT_EQ(t.layout(), sw::Layout::compact(sw::Shape::of({2, 3})));
    EXPECT_EQ(floats(t), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  }
}

TEST(Formats_Load, NpyIntoFileBackedMapsTheUsersFileWithoutCopy) {
  TempDir dir;
  const fs::path file = dir / "m.npy";
  write_all(file, npy_file("{'descr': '<i4', 'fortran_order': False, 'shape': (3,), }", std::string("\x07\0\0\0\x08\0\0\0\x09\0\0\0", 12)));
  sw::LoadOptions o;
  o.carrier = sw::LoadTarget::FileBacked;
  const Tensor t = sw::load_npy(file, o);
  auto fb = std::dynamic_pointer_cast<sw::FileBacked>(t.carrier());
  ASSERT_TRUE(fb);
  EXPECT_EQ(fb->path(), file);
  EXPECT_FALSE(fb->owns_file());
  EXPECT_FALSE(fb->is_mutable());
  EXPECT_EQ(t.at({2}).i, 9);
  // The mapping is the file: a change to the file is seen through the tensor.
  {
    std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(sw::inspect_file(file).tensors.at(0).data_offset);
    f.put('\x05');
  }
  EXPECT_EQ(t.at({0}).i, 5);
  fb->release();
  EXPECT_TRUE(fs::exists(file));  // never deleted
}

TEST(Formats_Load, MutableFileBackedWritesReachTheFile) {
  TempDir dir;
  const fs::path file = dir / "w.npy";
  sw::save_npy(file, f32({1, 2}, sw::Shape::of({2})));
  sw::LoadOptions o;
  o.carrier = sw::LoadTarget::FileBacked;
  o.mutable_ = true;
  Tensor t = sw::load_npy(file, o);
  t.set(std::vector<std::int64_t>{1}, Value::from_float32(7.5f));
  std::dynamic_pointer_cast<sw::FileBacked>(t.carrier())->flush();
  EXPECT_EQ(floats(sw::load_npy(file)), (std::vector<float>{1, 7.5f}));
}

TEST(Formats_Load, SafetensorsIntoFileBackedMapsEachTensorAtItsOffset) {
  TempDir dir;
  const fs::path file = dir / "s.safetensors";
  std::map<std::string, Tensor> in{{"w", f32({1, 2, 3, 4}, sw::Shape::of({2, 2}))}, {"b", f32({9}, sw::Shape::of({1}))}};
  sw::save_safetensors(file, in);
  sw::LoadOptions o;
  o.carrier = sw::LoadTarget::FileBacked;
  const auto out = sw::load_safetensors(file, o);
  ASSERT_EQ(out.size(), 2u);
  for (const auto& [name, t] : out) {
    auto fb = std::dynamic_pointer_cast<sw::FileBacked>(t.carrier());
    ASSERT_TRUE(fb);
    EXPECT_EQ(fb->path(), file);
    EXPECT_FALSE(fb->owns_file());
    EXPECT_EQ(floats(t), floats(in.at(name)));
  }
}

TEST(Formats_Load, MisalignedDataIsCopiedIntoATemporaryFileBacked) {
  TempDir dir;
  const fs::path file = dir / "odd.safetensors";
  // A bool of one byte first: the float32 tensor starts at an odd offset.
  const std::string json = R"({"a":{"dtype":"BOOL","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}})";
  write_all(file, safetensors_file(json, std::string("\x01", 1) + float_bytes({2.5f})));
  const auto cpu = sw::load_safetensors(file);
  EXPECT_EQ(cpu.at("a").at({0}).b, true);
  EXPECT_EQ(cpu.at("b").at({0}).f, 2.5f);
  sw::LoadOptions o;
  o.carrier = sw::LoadTarget::FileBacked;
  EXPECT_THROW(sw::load_safetensors(file, o), sw::ValueError);  // the bool cannot live on FileBacked
  const std::string json2 = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  std::string f2 = safetensors_file(json2 + " ", float_bytes({3.5f}));  // 9 + 8 = 17: odd data start
  write_all(dir / "odd2.safetensors", f2);
  const auto fbm = sw::load_safetensors(dir / "odd2.safetensors", o);
  auto fb = std::dynamic_pointer_cast<sw::FileBacked>(fbm.at("a").carrier());
  ASSERT_TRUE(fb);
  EXPECT_TRUE(fb->owns_file());
  EXPECT_FALSE(fb->is_mutable());
  EXPECT_EQ(fbm.at("a").at({0}).f, 3.5f);
}

TEST(Formats_Load, BoolOnFileBackedIsValueError) {
  TempDir dir;
  write_all(dir / "b.npy", npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x01\x00", 2)));
  EXPECT_EQ(sw::load_npy(dir / "b.npy").at({0}).b, true);
  sw::LoadOptions o;
  o.carrier = sw::LoadTarget::FileBacked;
  try {
    sw::load_npy(dir / "b.npy", o);
    ADD_FAILURE();
  } catch (const sw::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("FileBacked does not store"), std::string::npos) << e.what();
  }
}

TEST(Formats_Load, BoolByteOtherThanZeroOrOneIsValueError) {
  TempDir dir;
  write_all(dir / "b.npy", npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x01\x02", 2)));
  EXPECT_THROW(sw::load_npy(dir / "b.npy"), sw::ValueError);
}

TEST(Formats_Load, BadHeaderNamesTheFile) {
  TempDir dir;
  write_all(dir / "bad.npy", "not a numpy file at all");
  try {
    sw::load_npy(dir / "bad.npy");
    ADD_FAILURE();
  } catch (const sw::ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("bad.npy"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("wrong magic"), std::string::npos);
  }
}

TEST(Formats_Load, InspectDetectsTheFormat) {
  TempDir dir;
  sw::save_npy(dir / "x.npy", f32({1, 2, 3}, sw::Shape::of({3})));
  sw::save_safetensors(dir / "x.bin", {{"t", f32({1}, sw::Shape::of({1}))}});
  EXPECT_EQ(sw::inspect_file(dir / "x.npy").format, sw::FileFormat::Npy);
  const sw::FileHeader h = sw::inspect_file(dir / "x.bin");
  EXPECT_EQ(h.format, sw::FileFormat::Safetensors);
  EXPECT_EQ(h.tensors.at(0).name, "t");
  EXPECT_EQ(h.header_bytes % 8, 0);
}

// ---- saving

TEST(Formats_Save, NpyRoundTripFromAnyLayoutAndCarrier) {
  TempDir dir;
  const Tensor base = f32({1, 2, 3, 4, 5, 6}, sw::Shape::of({2, 3}));
  const Tensor view = base.permute({1, 0}).slice(0, 1, 3);  // shape (2, 2): [[2, 5], [3, 6]]
  sw::save_npy(dir / "v.npy", view);
  EXPECT_EQ(floats(sw::load_npy(dir / "v.npy")), (std::vector<float>{2, 5, 3, 6}));
  // From a FileBacked tensor.
  std::vector<Value> v{Value::from_int32(4), Value::from_int32(-1)};
  const Tensor fbt(sw::FileBacked::from_values(v, DType::Int32()), sw::Shape::of({2}));
  sw::save_npy(dir / "fb.npy", fbt);
  const Tensor back = sw::load_npy(dir / "fb.npy");
  EXPECT_EQ(&back.dtype(), &DType::Int32());
  EXPECT_EQ(back.at({1}).i, -1);
  EXPECT_EQ(sw::inspect_file(dir / "fb.npy").header_bytes % 64, 0);
  EXPECT_EQ(dir.names(), (std::vector<std::string>{"fb.npy", "v.npy"}));
}

TEST(Formats_Save, SafetensorsRoundTripWithMetadataAndBool) {
  TempDir dir;
  std::vector<Value> bools{Value::from_bool(true), Value::from_bool(false), Value::from_bool(true)};
  std::map<std::string, Tensor> in{{"mask", Tensor(sw::CPU::from_values(bools, DType::Bool()), sw::Shape::of({3}))},
                                   {"w", f32({1, 2}, sw::Shape::of({2}))}};
  sw::SaveOptions o;
  o.metadata = {{"format", "pt"}};
  sw::save_safetensors(dir / "m.safetensors", in, o);
  const sw::FileHeader h = sw::inspect_file(dir / "m.safetensors");
  EXPECT_EQ(h.metadata.at("format"), "pt");
  EXPECT_EQ(h.tensors.at(0).name, "w");  // 4-byte tensors first: aligned
  const auto out = sw::load_safetensors(dir / "m.safetensors");
  EXPECT_EQ(out.at("mask").at({2}).b, true);
  EXPECT_EQ(out.at("mask").at({1}).b, false);
  EXPECT_EQ(out.at("w").at({1}).f, 2.0f);
}

TEST(Formats_Save, ReservedOrEmptyNameIsValueError) {
  TempDir dir;
  EXPECT_THROW(sw::save_safetensors(dir / "x", {{"", f32({1}, sw::Shape::of({1}))}}), sw::ValueError);
  EXPECT_THROW(sw::save_safetensors(dir / "x", {{"__metadata__", f32({1}, sw::Shape::of({1}))}}), sw::ValueError);
  EXPECT_TRUE(dir.names().empty());
}

TEST(Formats_Save, ReplacesTheOldFileAtomically) {
  TempDir dir;
  sw::save_npy(dir / "r.npy", f32({1}, sw::Shape::of({1})));
  sw::save_npy(dir / "r.npy", f32({2, 3}, sw::Shape::of({2})));
  EXPECT_EQ(floats(sw::load_npy(dir / "r.npy")), (std::vector<float>{2, 3}));
  EXPECT_EQ(dir.names(), (std::vector<std::string>{"r.npy"}));
}

TEST(Formats_Save, ProgressOverTheThresholdOnly) {
  TempDir dir;
  const Tensor t = f32(std::vector<float>(1000, 1.0f), sw::Shape::of({1000}));
  std::vector<std::pair<std::int64_t, std::int64_t>> calls;
  sw::SaveOptions o;
  o.progress = [&](std::int64_t done, std::int64_t total) { calls.emplace_back(done, total); };
  o.progress_threshold_bytes = 100;
  sw::save_npy(dir / "p.npy", t, o);
  ASSERT_FALSE(calls.empty());
  const std::int64_t total = sw::inspect_file(dir / "p.npy").header_bytes + 4000;
  EXPECT_EQ(calls.back().first, total);
  EXPECT_EQ(calls.back().second, total);
  EXPECT_TRUE(std::is_sorted(calls.begin(), calls.end()));
  calls.clear();
  o.progress_threshold_bytes = 1 << 20;
  sw::save_npy(dir / "p.npy", t, o);
  EXPECT_TRUE(calls.empty());
}

TEST(Formats_Save, ThrowingProgressAbortsAndLeavesTheOldFile) {
  TempDir dir;
  sw::save_npy(dir / "p.npy", f32({5}, sw::Shape::of({1})));
  const std::string before = read_all(dir / "p.npy");
  sw::SaveOptions o;
  o.progress = [](std::int64_t, std::int64_t) { throw sw::RuntimeError("cancelled"); };
  o.progress_threshold_bytes = 0;
  EXPECT_THROW(sw::save_npy(dir / "p.npy", f32({1, 2}, sw::Shape::of({2})), o), sw::RuntimeError);
  EXPECT_EQ(read_all(dir / "p.npy"), before);
  EXPECT_EQ(dir.names(), (std::vector<std::string>{"p.npy"}));
}

// ---- fault injection (issue 13 item 6): every call site of the savers

struct SaveFault {
  const char* call;
  int error;
  int nth;
};

class Formats_SaveFaults : public ::testing::TestWithParam<SaveFault> {};

TEST_P(Formats_SaveFaults, OldFileIntactNoTemporaryLeftOSErrorNamesFile) {
  const SaveFault fault = GetParam();
  TempDir dir;
  const fs::path file = dir / "keep.npy";
  sw::save_npy(file, f32({1, 2, 3}, sw::Shape::of({3})));
  const std::string before = read_all(file);
  FaultyIo io(fault.call, fault.error, fault.nth);
  sw::sysio::ScopedSystemIo scope(io);
  try {
    sw::save_npy(file, f32(std::vector<float>(3000, 9.0f), sw::Shape::of({3000})));
    ADD_FAILURE() << "no OSError at " << fault.call;
  } catch (const sw::OSError& e) {
    EXPECT_EQ(e.error_number(), fault.error);
    EXPECT_FALSE(e.filename().empty());
    if (std::string(fault.call) == "write") {
      ASSERT_TRUE(e.offset().has_value());
      EXPECT_EQ(*e.offset(), fault.nth == 0 ? 0 : 128);  // the header (128 bytes), then the data's first chunk
    }
  }
  EXPECT_EQ(read_all(file), before);
  EXPECT_EQ(dir.names(), (std::vector<std::string>{"keep.npy"}));
}

INSTANTIATE_TEST_SUITE_P(EveryCallSite, Formats_SaveFaults,
                         ::testing::Values(SaveFault{"create_exclusive", EACCES, 0},
                                           SaveFault{"create_exclusive", ENOSPC, 0},
                                           SaveFault{"write", EIO, 0}, SaveFault{"write", ENOSPC, 1},
                                           SaveFault{"sync", EIO, 0}, SaveFault{"close", EIO, 0},
                                           SaveFault{"rename", EIO, 0}, SaveFault{"rename", EXDEV, 0}),
                         [](const ::testing::TestParamInfo<SaveFault>& p) {
                           return fmt::format("{}_{}_{}", p.param.call, p.param.error, p.param.nth);
                         });

TEST(Formats_SaveFaults, ShortWritesAreCompleted) {
  TempDir dir;
  FaultyIo io("none", 0, 0, /*short_io=*/true);
  sw::sysio::ScopedSystemIo scope(io);
  sw::save_safetensors(dir / "s.safetensors", {{"a", f32({1, 2, 3}, sw::Shape::of({3}))}});
  EXPECT_EQ(floats(sw::load_safetensors(dir / "s.safetensors").at("a")), (std::vector<float>{1, 2, 3}));
}

TEST(Formats_SaveFaults, ShortWriteThenNoSpaceNamesTheOffset) {
  TempDir dir;
  write_all(dir / "k.npy", "old");
  FaultyIo io("write", ENOSPC, 5, /*short_io=*/true);  // 5 writes of 3 bytes, then ENOSPC
  sw::sysio::ScopedSystemIo scope(io);
  try {
    sw::save_npy(dir / "k.npy", f32({1, 2, 3}, sw::Shape::of({3})));
    ADD_FAILURE();
  } catch (const sw::OSError& e) {
    EXPECT_EQ(e.error_number(), ENOSPC);
    EXPECT_EQ(e.offset(), std::optional<std::int64_t>(15));
  }
  EXPECT_EQ(read_all(dir / "k.npy"), "old");
  EXPECT_EQ(dir.names(), (std::vector<std::string>{"k.npy"}));
}

TEST(Formats_SaveFaults, DirectorySyncFailureAfterRenameReportsWithNewFileComplete) {
  for (const char* call : {"open_directory", "sync"}) {
    TempDir dir;
    write_all(dir / "n.npy", "old");
    FaultyIo io(call, EIO, std::string(call) == "sync" ? 1 : 0);  // sync #0 is the file's
    sw::sysio::ScopedSystemIo scope(io);
    try {
      sw::save_npy(dir / "n.npy", f32({4}, sw::Shape::of({1})));
      ADD_FAILURE() << call;
    } catch (const sw::OSError& e) {
      EXPECT_EQ(e.error_number(), EIO);
      EXPECT_EQ(fs::path(e.filename()), dir.path()) << call;
    }
    EXPECT_EQ(floats(sw::load_npy(dir / "n.npy")), (std::vector<float>{4})) << call;
    EXPECT_EQ(dir.names(), (std::vector<std::string>{"n.npy"})) << call;
  }
}

TEST(Formats_SaveFaults, DirectoryCloseFailureIsReportedAfterTheRename) {
  TempDir dir;
  write_all(dir / "c.npy", "old");
  FaultyIo io("close", EIO, 1);  // close #0 is the temporary file's, #1 the directory's
  sw::sysio::ScopedSystemIo scope(io);
  try {
    sw::save_npy(dir / "c.npy", f32({6}, sw::Shape::of({1})));
    ADD_FAILURE();
  } catch (const sw::OSError& e) {
    EXPECT_EQ(e.error_number(), EIO);
    EXPECT_EQ(fs::path(e.filename()), dir.path());
  }
  EXPECT_EQ(floats(sw::load_npy(dir / "c.npy")), (std::vector<float>{6}));
  EXPECT_EQ(dir.names(), (std::vector<std::string>{"c.npy"}));
}

// The clean-up's own failure (unlink of the temporary file) never hides the
// error that caused it; the temporary file then stays (nothing else can
// remove it), and the destination is still untouched.
TEST(Formats_SaveFaults, FailedCleanUpKeepsTheOriginalError) {
  struct TwoFaults : FaultyIo {
    TwoFaults() : FaultyIo("write", EIO) {}
    int remove_file(const std::string&) noexcept override { return EACCES; }
  } io;
  TempDir dir;
  write_all(dir / "u.npy", "old");
  {
    sw::sysio::ScopedSystemIo scope(io);
    try {
      sw::save_npy(dir / "u.npy", f32({1}, sw::Shape::of({1})));
      ADD_FAILURE();
    } catch (const sw::OSError& e) {
      EXPECT_EQ(e.error_number(), EIO);
    }
  }
  EXPECT_EQ(read_all(dir / "u.npy"), "old");
  EXPECT_EQ(dir.names().size(), 2u);  // u.npy and the temporary file unlink could not remove
}

// ---- fault injection: every call site of the loaders

TEST(Formats_LoadFaults, CloseFailureOfAReadOnlyFileIsIgnored) {
  TempDir dir;
  sw::save_npy(dir / "c.npy", f32({1, 2}, sw::Shape::of({2})));
  FaultyIo io("close", EIO, 0);
  sw::sysio::ScopedSystemIo scope(io);
  EXPECT_EQ(floats(sw::load_npy(dir / "c.npy")), (std::vector<float>{1, 2}));
  EXPECT_EQ(io.calls("close"), 1);
}

// Mapping goes through FileBacked::open, whose system calls go through the
// same replaceable interface: a failing mmap is an OSError naming the user's
// file, which stays as it was.
TEST(Formats_LoadFaults, MappingFailureIsOSErrorNamingTheUsersFile) {
  struct FailingMap : sw::sysio::SystemIo {
    int map(int, std::int64_t, std::size_t, bool, void*&) noexcept override { return ENOMEM; }
  } io;
  TempDir dir;
  const fs::path file = dir / "m.npy";
  sw::save_npy(file, f32({1, 2}, sw::Shape::of({2})));
  const std::string before = read_all(file);
  sw::sysio::ScopedSystemIo scope(io);
  sw::LoadOptions o;
  o.carrier = sw::LoadTarget::FileBacked;
  try {
    sw::load_npy(file, o);
    ADD_FAILURE();
  } catch (const sw::OSError& e) {
    EXPECT_EQ(e.error_number(), ENOMEM);
    EXPECT_EQ(fs::path(e.filename()), file);
  }
  EXPECT_EQ(read_all(file), before);
}

TEST(Formats_LoadFaults, OpenFstatAndReadFailuresAreOSErrors) {
  TempDir dir;
  const fs::path file = dir / "l.npy";
  sw::save_npy(file, f32({1, 2}, sw::Shape::of({2})));
  for (const char* call : {"open_read", "file_size", "read_at"}) {
    for (const int nth : {0, 1}) {
      if (std::string(call) != "read_at" && nth == 1) continue;
      FaultyIo io(call, EIO, nth);  // read_at #1: the data, after the header
      sw::sysio::ScopedSystemIo scope(io);
      try {
        sw::load_npy(file);
        ADD_FAILURE() << call;
      } catch (const sw::OSError& e) {
        EXPECT_EQ(e.error_number(), EIO);
        EXPECT_EQ(fs::path(e.filename()), file);
        if (std::string(call) == "read_at") {
          EXPECT_EQ(e.offset(), std::optional<std::int64_t>(nth == 0 ? 0 : 128));
        }
      }
    }
  }
}

TEST(Formats_LoadFaults, ShortReadsAreCompleted) {
  TempDir dir;
  sw::save_npy(dir / "s.npy", f32({1, 2, 3}, sw::Shape::of({3})));
  FaultyIo io("none", 0, 0, /*short_io=*/true);
  sw::sysio::ScopedSystemIo scope(io);
  EXPECT_EQ(floats(sw::load_npy(dir / "s.npy")), (std::vector<float>{1, 2, 3}));
}

TEST(Formats_LoadFaults, EndOfFileWhileReadingIsValueError) {
  TempDir dir;
  sw::save_npy(dir / "e.npy", f32({1}, sw::Shape::of({1})));
  FaultyIo io("read_at_eof", 0, 99);
  sw::sysio::ScopedSystemIo scope(io);
  EXPECT_THROW(sw::load_npy(dir / "e.npy"), sw::ValueError);
}

TEST(Formats_LoadFaults, MissingFileIsOSErrorWithEnoent) {
  TempDir dir;
  try {
    sw::load_safetensors(dir / "missing.safetensors");
    ADD_FAILURE();
  } catch (const sw::OSError& e) {
    EXPECT_EQ(e.error_number(), ENOENT);
  }
}
