// The URL syntax's types (ThumbnailRequest, ThumborPath, OutputFormat, ServiceError) are part of this module's
// API: a user of the service imports one module.
@_exported import ThumborURLs
