// libmetal2vk.so is made of the metal2vk static libraries (package/CMakeLists.txt); it has no code of its own.
