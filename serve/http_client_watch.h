// Noticing that an HTTP client went away while its request waits or runs. httplib 0.11 gives a
// handler no handle on its connection, so the watch finds the connection's socket by its
// addresses (the handler's thread owns it until the handler returns, so the descriptor cannot be
// reused meanwhile) and peeks at it: end of stream or an error means the client closed.
#pragma once

namespace httplib {
struct Request;
}

namespace kiln::serve {

class ClientWatch {
public:
  explicit ClientWatch(const httplib::Request &req);
  // True once the client has closed the connection (or it broke). Never blocks.
  bool gone() const;
  bool found() const { return fd_ >= 0; }

private:
  int fd_ = -1;
};

} // namespace kiln::serve
