/* The driver's error names and strings: X(value, NAME, string) for every
 * CUresult of cuda.h's cudaError_enum (CUDA 13.0). The strings are what
 * cuGetErrorString returns on the real driver (captured from driver
 * 580.159.04 / CUDA 13.0 on an H200), so messages built on the fake read like
 * real ones. Keyed by value, so that the fake builds with older headers too. */
#ifndef CUSCOPE_LIB_FAKE_ERRORS_H
#define CUSCOPE_LIB_FAKE_ERRORS_H

#define FAKE_ERRORS(X) \
    X(0, CUDA_SUCCESS, "no error") \
    X(1, CUDA_ERROR_INVALID_VALUE, "invalid argument") \
    X(2, CUDA_ERROR_OUT_OF_MEMORY, "out of memory") \
    X(3, CUDA_ERROR_NOT_INITIALIZED, "initialization error") \
    X(4, CUDA_ERROR_DEINITIALIZED, "driver shutting down") \
    X(5, CUDA_ERROR_PROFILER_DISABLED, "profiler disabled while using external profiling tool") \
    X(6, CUDA_ERROR_PROFILER_NOT_INITIALIZED, "profiler not initialized: call cudaProfilerInitialize()") \
    X(7, CUDA_ERROR_PROFILER_ALREADY_STARTED, "profiler already started") \
    X(8, CUDA_ERROR_PROFILER_ALREADY_STOPPED, "profiler already stopped") \
    X(34, CUDA_ERROR_STUB_LIBRARY, "CUDA driver is a stub library") \
    X(36, CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER, "API call is not supported in the installed CUDA driver") \
    X(46, CUDA_ERROR_DEVICE_UNAVAILABLE, "CUDA-capable device(s) is/are busy or unavailable") \
    X(100, CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected") \
    X(101, CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal") \
    X(102, CUDA_ERROR_DEVICE_NOT_LICENSED, "device doesn't have valid Grid license") \
    X(200, CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid") \
    X(201, CUDA_ERROR_INVALID_CONTEXT, "invalid device context") \
    X(202, CUDA_ERROR_CONTEXT_ALREADY_CURRENT, "context already current") \
    X(205, CUDA_ERROR_MAP_FAILED, "mapping of buffer object failed") \
    X(206, CUDA_ERROR_UNMAP_FAILED, "unmapping of buffer object failed") \
    X(207, CUDA_ERROR_ARRAY_IS_MAPPED, "array is mapped") \
    X(208, CUDA_ERROR_ALREADY_MAPPED, "resource already mapped") \
    X(209, CUDA_ERROR_NO_BINARY_FOR_GPU, "no kernel image is available for execution on the device") \
    X(210, CUDA_ERROR_ALREADY_ACQUIRED, "resource already acquired") \
    X(211, CUDA_ERROR_NOT_MAPPED, "resource not mapped") \
    X(212, CUDA_ERROR_NOT_MAPPED_AS_ARRAY, "resource not mapped as array") \
    X(213, CUDA_ERROR_NOT_MAPPED_AS_POINTER, "resource not mapped as pointer") \
    X(214, CUDA_ERROR_ECC_UNCORRECTABLE, "uncorrectable ECC error encountered") \
    X(215, CUDA_ERROR_UNSUPPORTED_LIMIT, "limit is not supported on this architecture") \
    X(216, CUDA_ERROR_CONTEXT_ALREADY_IN_USE, "exclusive-thread device already in use by a different thread") \
    X(217, CUDA_ERROR_PEER_ACCESS_UNSUPPORTED, "peer access is not supported between these two devices") \
    X(218, CUDA_ERROR_INVALID_PTX, "a PTX JIT compilation failed") \
    X(219, CUDA_ERROR_INVALID_GRAPHICS_CONTEXT, "invalid OpenGL or DirectX context") \
    X(220, CUDA_ERROR_NVLINK_UNCORRECTABLE, "uncorrectable NVLink error detected during the execution") \
    X(221, CUDA_ERROR_JIT_COMPILER_NOT_FOUND, "PTX JIT compiler library not found") \
    X(222, CUDA_ERROR_UNSUPPORTED_PTX_VERSION, "the provided PTX was compiled with an unsupported toolchain.") \
    X(223, CUDA_ERROR_JIT_COMPILATION_DISABLED, "PTX JIT compilation was disabled") \
    X(224, CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY, "the provided execution affinity is not supported") \
    X(225, CUDA_ERROR_UNSUPPORTED_DEVSIDE_SYNC, "the provided PTX contains unsupported call to cudaDeviceSynchronize") \
    X(226, CUDA_ERROR_CONTAINED, "Invalid access of peer GPU memory over nvlink or a hardware error") \
    X(300, CUDA_ERROR_INVALID_SOURCE, "device kernel image is invalid") \
    X(301, CUDA_ERROR_FILE_NOT_FOUND, "file not found") \
    X(302, CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND, "shared object symbol not found") \
    X(303, CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, "shared object initialization failed") \
    X(304, CUDA_ERROR_OPERATING_SYSTEM, "OS call failed or operation not supported on this OS") \
    X(400, CUDA_ERROR_INVALID_HANDLE, "invalid resource handle") \
    X(401, CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state") \
    X(402, CUDA_ERROR_LOSSY_QUERY, "attempted introspection would be semantically lossy") \
    X(500, CUDA_ERROR_NOT_FOUND, "named symbol not found") \
    X(600, CUDA_ERROR_NOT_READY, "device not ready") \
    X(700, CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered") \
    X(701, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "too many resources requested for launch") \
    X(702, CUDA_ERROR_LAUNCH_TIMEOUT, "the launch timed out and was terminated") \
    X(703, CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING, "launch uses incompatible texturing mode") \
    X(704, CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "peer access is already enabled") \
    X(705, CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "peer access has not been enabled") \
    X(708, CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE, "cannot set while device is active in this process") \
    X(709, CUDA_ERROR_CONTEXT_IS_DESTROYED, "context is destroyed") \
    X(710, CUDA_ERROR_ASSERT, "device-side assert triggered") \
    X(711, CUDA_ERROR_TOO_MANY_PEERS, "peer mapping resources exhausted") \
    X(712, CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped") \
    X(713, CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region") \
    X(714, CUDA_ERROR_HARDWARE_STACK_ERROR, "hardware stack error") \
    X(715, CUDA_ERROR_ILLEGAL_INSTRUCTION, "an illegal instruction was encountered") \
    X(716, CUDA_ERROR_MISALIGNED_ADDRESS, "misaligned address") \
    X(717, CUDA_ERROR_INVALID_ADDRESS_SPACE, "operation not supported on global/shared address space") \
    X(718, CUDA_ERROR_INVALID_PC, "invalid program counter") \
    X(719, CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure") \
    X(720, CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE, "too many blocks in cooperative launch") \
    X(721, CUDA_ERROR_TENSOR_MEMORY_LEAK, "tensor memory not completely freed") \
    X(800, CUDA_ERROR_NOT_PERMITTED, "operation not permitted") \
    X(801, CUDA_ERROR_NOT_SUPPORTED, "operation not supported") \
    X(802, CUDA_ERROR_SYSTEM_NOT_READY, "system not yet initialized") \
    X(803, CUDA_ERROR_SYSTEM_DRIVER_MISMATCH, "system has unsupported display driver / cuda driver combination") \
    X(804, CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE, "forward compatibility was attempted on non supported HW") \
    X(805, CUDA_ERROR_MPS_CONNECTION_FAILED, "MPS client failed to connect to the MPS control daemon or the MPS server") \
    X(806, CUDA_ERROR_MPS_RPC_FAILURE, "the remote procedural call between the MPS server and the MPS client failed") \
    X(807, CUDA_ERROR_MPS_SERVER_NOT_READY, "MPS server is not ready to accept new MPS client requests") \
    X(808, CUDA_ERROR_MPS_MAX_CLIENTS_REACHED, "the hardware resources required to create MPS client have been exhausted") \
    X(809, CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED, "the hardware resources required to support device connections have been exhausted") \
    X(810, CUDA_ERROR_MPS_CLIENT_TERMINATED, "the MPS client has been terminated by the server") \
    X(811, CUDA_ERROR_CDP_NOT_SUPPORTED, "is using CUDA Dynamic Parallelism, but the current configuration, like MPS, does not support it") \
    X(812, CUDA_ERROR_CDP_VERSION_MISMATCH, "unsupported interaction between different versions of CUDA Dynamic Parallelism") \
    X(900, CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing") \
    X(901, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "operation failed due to a previous error during capture") \
    X(902, CUDA_ERROR_STREAM_CAPTURE_MERGE, "operation would result in a merge of separate capture sequences") \
    X(903, CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, "capture was not ended in the same stream as it began") \
    X(904, CUDA_ERROR_STREAM_CAPTURE_UNJOINED, "capturing stream has unjoined work") \
    X(905, CUDA_ERROR_STREAM_CAPTURE_ISOLATION, "dependency created on uncaptured work in another stream") \
    X(906, CUDA_ERROR_STREAM_CAPTURE_IMPLICIT, "operation would make the legacy stream depend on a capturing blocking stream") \
    X(907, CUDA_ERROR_CAPTURED_EVENT, "operation not permitted on an event last recorded in a capturing stream") \
    X(908, CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD, "attempt to terminate a thread-local capture sequence from another thread") \
    X(909, CUDA_ERROR_TIMEOUT, "wait operation timed out") \
    X(910, CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE, "the graph update was not performed because it included changes which violated constraints specific to instantiated graph update") \
    X(911, CUDA_ERROR_EXTERNAL_DEVICE, "an async error has occured in external entity outside of CUDA") \
    X(912, CUDA_ERROR_INVALID_CLUSTER_SIZE, "a kernel launch error has occurred due to cluster misconfiguration") \
    X(913, CUDA_ERROR_FUNCTION_NOT_LOADED, "the function handle is not loaded when calling an API that requires a loaded function") \
    X(914, CUDA_ERROR_INVALID_RESOURCE_TYPE, "one or more resources passed in are not valid resource types for the operation") \
    X(915, CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, "one or more resources are insufficient or non-applicable for the operation") \
    X(916, CUDA_ERROR_KEY_ROTATION, "an error happened during the key rotation sequence") \
    X(999, CUDA_ERROR_UNKNOWN, "unknown error")

#endif
