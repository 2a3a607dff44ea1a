print("sample-cli")
