"""Storage and files: locations and credentials, storage errors, create-only publishing, output places, Parquet resources read metadata first, run directories, spreadsheet-safe CSV."""
